"""A descriptor that names a base states only what differs: the loader merges the base in, refuses cycles and
missing bases in one line, and names the base when an inherited value is what breaks a rule."""

import json
import subprocess
import sys

import pytest

from bert.descriptor_files import merged_descriptor, resolved_descriptor
from bert.system import load_descriptor
from bert.typed_config import ConfigError
from tests.helpers.repo import REPO


def _write(folder, name, data) -> None:
    (folder / f"{name}.json").write_text(json.dumps(data))


@pytest.fixture
def base(tmp_path):
    data, _ = resolved_descriptor(REPO / "systems" / "cpu_micro.json")
    data["run"]["dataset"]["dir"] = str(REPO / "data" / "cpu_micro")
    _write(tmp_path, "micro_base", data)
    return data


def test_objects_merge_key_by_key_and_other_values_replace():
    base = {"run": {"optimizer": {"beta_1": 0.9, "beta_2": 0.999}, "length_bins": [128, 512], "seed": 3}}
    own = {"run": {"optimizer": {"beta_1": 0.8}, "length_bins": [512], "seed": None}}
    assert merged_descriptor(base, own) == {
        "run": {"optimizer": {"beta_1": 0.8, "beta_2": 0.999}, "length_bins": [512], "seed": None}}
    assert base["run"]["optimizer"]["beta_1"] == 0.9  # the base is not edited


def test_a_child_resolves_to_its_base_with_its_own_values_laid_over(tmp_path, base):
    _write(tmp_path, "child", {"base": "micro_base", "system": {"system_name": "child system"},
                               "run": {"optimizer": {"beta_1": 0.8}, "global_batch_size": 16}})
    child, parent = load_descriptor(tmp_path / "child.json"), load_descriptor(tmp_path / "micro_base.json")
    assert child.name == "child" and child.description["system_name"] == "child system"
    assert child.run.optimizer.beta_1 == 0.8 and child.run.global_batch_size == 16
    assert child.run.optimizer.beta_2 == parent.run.optimizer.beta_2
    assert child.run.model == parent.run.model and child.run.dataset == parent.run.dataset
    assert "base" not in child.data and child.data["run"]["optimizer"]["beta_2"] == base["run"]["optimizer"]["beta_2"]


def test_bases_chain_and_a_grandchild_takes_the_nearest_value(tmp_path, base):
    _write(tmp_path, "middle", {"base": "micro_base", "run": {"seed": 5, "print_interval_steps": 3}})
    _write(tmp_path, "leaf", {"base": "middle", "run": {"seed": 7}})
    leaf = load_descriptor(tmp_path / "leaf.json")
    assert (leaf.run.seed, leaf.run.print_interval_steps) == (7, 3)


def test_a_cycle_is_refused_naming_the_files(tmp_path):
    _write(tmp_path, "a", {"base": "b", "run": {}})
    _write(tmp_path, "b", {"base": "a", "run": {}})
    with pytest.raises(ConfigError, match=r"a\.json: base: the bases form a cycle \(a -> b -> a\)"):
        load_descriptor(tmp_path / "a.json")


def test_a_missing_or_malformed_base_is_named(tmp_path):
    _write(tmp_path, "orphan", {"base": "nosuch", "run": {}})
    with pytest.raises(ConfigError, match=r"orphan\.json: base: no descriptor nosuch\.json beside this one"):
        load_descriptor(tmp_path / "orphan.json")
    _write(tmp_path, "escape", {"base": "../systems/cpu_tiny", "run": {}})
    with pytest.raises(ConfigError, match=r"escape\.json: base: .* must name a descriptor by its file stem"):
        load_descriptor(tmp_path / "escape.json")


def test_an_inherited_value_that_breaks_a_rule_names_the_base(tmp_path, base):
    # The base's batch suits its own launch shape; the child's two nodes make it indivisible.
    nodes = int(base["system"]["number_of_nodes"]) * 3
    _write(tmp_path, "wide", {"base": "micro_base", "system": {"number_of_nodes": str(nodes)}})
    with pytest.raises(ConfigError) as info:
        load_descriptor(tmp_path / "wide.json")
    assert info.value.field == "run.global_batch_size"
    assert "the value comes from the base micro_base.json" in str(info.value)
    _write(tmp_path, "own_bad", {"base": "micro_base", "run": {"optimizer": {"beta_1": 1.5}}})
    with pytest.raises(ConfigError) as info:
        load_descriptor(tmp_path / "own_bad.json")
    assert info.value.field == "run.optimizer.beta_1" and "comes from the base" not in str(info.value)


def test_system_show_prints_the_resolved_descriptor(tmp_path, base):
    _write(tmp_path, "child", {"base": "micro_base", "run": {"seed": 11}})
    shown = subprocess.run([sys.executable, "-m", "bert.cli", "system", "show", str(tmp_path / "child.json")],
                           capture_output=True, text=True, check=True, cwd=REPO).stdout
    expected = dict(base, run=dict(base["run"], seed=11))
    assert json.loads(shown) == expected
