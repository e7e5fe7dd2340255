"""Finding and merging descriptors: a descriptor that names a base states only what differs (merged key by key,
cycles and missing bases refused in one line, the base named when an inherited value breaks a rule); a site keeps
its own in folders of its own (MLPERF_BERT_SYSTEMS), named like the published ones; a base is found by its stem
beside the descriptor, then in the site folders, then in systems/; a file nested absurdly deep is one line, and a
long chain of bases resolves in time linear in its length."""

import json
import time

import pytest
from click.testing import CliRunner

from bert import descriptor_files as descriptor_files_module
from bert.cli import main
from bert.descriptor_files import (
    PUBLISHED_SYSTEMS,
    SEARCH_PATH_ENV,
    available_descriptors,
    find_descriptor,
    merged_descriptor,
    notes_from_elsewhere,
    resolved_descriptor,
)
from bert.mlperf_rules import DEFAULT_RULESET
from bert.rcp import point_for
from bert.system import load_descriptor
from bert.typed_config import ConfigError
from tests.helpers.repo import REPO

EIGHT_NODES = {"number_of_nodes": "8", "system_name": "Site DGX H100 (8 nodes)"}


def _write(folder, name, data):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(data))
    return folder / f"{name}.json"



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


@pytest.fixture
def site(tmp_path, monkeypatch):
    """Two site folders on the search path, the first holding an 8-node DGX H100 that inherits the published one."""
    first, second = tmp_path / "site" / "systems", tmp_path / "shared"
    _write(first, "site_h100_8x8", {"base": "dgxh100_1x8", "system": EIGHT_NODES,
                                    "run": {"global_batch_size": 3072, "rcp_hyperparameters": True,
                                            "performance": {"inter_node_gb_s": 400.0},
                                            "notes": {"site": "Our cluster."}}})
    second.mkdir(parents=True)
    monkeypatch.setenv(SEARCH_PATH_ENV, f"{first}:{second}")
    return first, second


def test_a_site_descriptor_is_found_by_name_and_inherits_a_published_one_by_name(site):
    first, second = site
    system = load_descriptor("site_h100_8x8")
    assert system.path == (first / "site_h100_8x8.json").resolve() and system.nodes == 8
    # Its batch's reference hyperparameters, not the base's (chosen for 768): the installed RCP file's.
    assert system.run.optimizer.training_steps == point_for(3072, DEFAULT_RULESET).hyperparameters["training_steps"]
    assert available_descriptors()["site_h100_8x8"] == first / "site_h100_8x8.json"
    assert available_descriptors()["cpu_tiny"] == PUBLISHED_SYSTEMS / "cpu_tiny.json"
    # The published notes that describe the base's own system are named, the site's own topic is not.
    inherited = notes_from_elsewhere(system.path)
    assert inherited["configuration"].name == "dgxh100_1x8.json" and "site" not in inherited
    checked = CliRunner().invoke(main, ["system", "check", "site_h100_8x8"])
    assert checked.exit_code == 0 and checked.stdout.startswith(f"{system.path}: ok (8 node(s) x 8 process(es)")
    assert checked.stderr == (f"{system.path}: note: run.notes topics {', '.join(sorted(inherited))} come from "
                              "dgxa100_1x8.json, dgxh100_1x8.json in another folder and describe that system: state "
                              "them for this one, or drop each with null\n")
    assert notes_from_elsewhere(PUBLISHED_SYSTEMS / "dgxh100_1x8.json") == {}  # a published child's family notes
    listed = CliRunner().invoke(main, ["system", "list"]).output.splitlines()
    assert listed[0] == f"descriptors in {first}, then {second}, then {PUBLISHED_SYSTEMS}:"
    assert listed[1].split() == ["site_h100_8x8", "8", "node(s)", "x", "8", "cuda,", "closed,", "global", "batch",
                                 "3072,", str(first)]
    assert any(line.split()[0] == "cpu_tiny" and line.endswith(", published") for line in listed)


def test_a_base_is_found_beside_then_in_the_site_folders_and_a_file_may_refine_its_namesake(site, tmp_path):
    first, second = site
    # The second site folder holds a base of the same name as a published descriptor: it wins over systems/.
    _write(second, "cpu_tiny", {"base": "cpu_tiny", "run": {"seed": 17}})
    beside = _write(tmp_path / "elsewhere", "beside", {"base": "local_base"})
    _write(tmp_path / "elsewhere", "local_base", {"base": "cpu_tiny", "run": {"print_interval_steps": 3}})
    system = load_descriptor(beside)
    assert (system.run.seed, system.run.print_interval_steps) == (17, 3)
    assert load_descriptor("cpu_tiny").path == (second / "cpu_tiny.json").resolve()


def test_an_unknown_name_a_missing_base_and_a_bad_search_path_are_one_line(site, tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match=r"no such descriptor; available: .*site_h100_8x8.*did you mean "
                                          r"'site_h100_8x8'\?"):
        find_descriptor("site_h100_8x9")
    orphan = _write(tmp_path, "orphan", {"base": "nowhere"})
    with pytest.raises(ConfigError, match=rf"orphan\.json: base: no descriptor nowhere\.json beside this one .* "
                                          rf"add its folder to {SEARCH_PATH_ENV}"):
        load_descriptor(orphan)
    monkeypatch.setenv(SEARCH_PATH_ENV, str(tmp_path / "no_such_folder"))
    result = CliRunner().invoke(main, ["system", "check", "cpu_tiny"])
    assert result.exit_code == 1 and len(result.output.splitlines()) == 1
    assert "no_such_folder is not a folder" in result.output


def test_a_descriptor_nested_100000_deep_is_one_line(tmp_path):
    arrays = tmp_path / "arrays.json"
    arrays.write_text("[" * 100_000 + "]" * 100_000)
    objects = _write(tmp_path, "objects", {"base": "arrays"})  # the same through a base, and as objects
    (tmp_path / "arrays_base.json").write_text('{"run": ' + '{"a": ' * 100_000 + "1" + "}" * 100_001)
    for path in (arrays, objects, tmp_path / "arrays_base.json"):
        result = CliRunner().invoke(main, ["system", "check", str(path)])
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        (line,) = result.output.splitlines()
        assert line.endswith("arrays.json: nests more than 32 levels of objects or lists (a descriptor needs 4, "
                             "as systems/cpu_tiny.json); is it a descriptor?") or "arrays_base.json: nests" in line


def test_a_chain_of_3000_bases_resolves_in_linear_time(tmp_path):
    links = 3000
    _write(tmp_path, "link0", {"base": "cpu_micro", "run": {"seed": 0}})
    for i in range(1, links):
        _write(tmp_path, f"link{i}", {"base": f"link{i - 1}", "run": {"seed": i}})
    started = time.perf_counter()
    system = load_descriptor(tmp_path / f"link{links - 1}.json")
    took = time.perf_counter() - started
    assert system.run.seed == links - 1
    # Well under a second per hundred links even on a loaded machine; each link used to re-check the earlier ones
    assert took < 0.5 * links / 100, f"{took:.1f} s for {links} links"


def test_a_5000_digit_integer_or_a_file_of_megabytes_is_one_line(tmp_path):
    """json refuses an integer of over 4,300 digits with a ValueError that was a traceback; a file of megabytes was
    read whole."""
    digits = tmp_path / "digits.json"
    digits.write_text('{"base": "cpu_micro", "run": {"seed": ' + "9" * 5000 + "}}")
    large = tmp_path / "large.json"
    large.write_text('{"base": "cpu_micro", "system": {"sw_notes": "' + "a" * (2 << 20) + '"}}')
    for path, problem in [(digits, "holds an integer of more than 4,300 digits; a descriptor's numbers have a few"),
                          (large, "is over 1,048,576 bytes, far more than a descriptor (a few KiB, as "
                                  "systems/cpu_tiny.json); is it a descriptor?")]:
        result = CliRunner().invoke(main, ["system", "check", str(path)])
        assert result.exit_code == 1 and result.output == f"Error: {path}: {problem}\n", result.output


def test_system_list_reads_each_file_once_however_long_the_chain_of_bases(tmp_path, monkeypatch):
    """Each descriptor of a chain read its bases again: 5,000 site descriptors, each the base of the next, took
    over 5 minutes to list (12.5 million reads)."""
    links = 300
    _write(tmp_path, "link0000", {"base": "cpu_micro", "run": {"seed": 0}})
    for i in range(1, links):
        _write(tmp_path, f"link{i:04d}", {"base": f"link{i - 1:04d}", "run": {"seed": i}})
    reads = []
    real = descriptor_files_module._read_descriptor_json
    monkeypatch.setattr(descriptor_files_module, "_read_descriptor_json", lambda path: reads.append(path) or real(path))
    monkeypatch.setenv(SEARCH_PATH_ENV, str(tmp_path))
    result = CliRunner().invoke(main, ["system", "list"])
    assert result.exit_code == 0 and f"link{links - 1:04d}   " in result.output and "INVALID" not in result.output
    files = links + len(list((REPO / "systems").glob("*.json")))
    assert len(reads) == len({path.resolve() for path in reads}) == files
