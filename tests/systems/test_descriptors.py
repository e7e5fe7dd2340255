"""Every published descriptor (the repository's systems/: a site's own descriptors, in MLPERF_BERT_SYSTEMS, are
not tested here) validates and its system-description part passes the official checker; the published
configurations say what MLPerf_BERT.md section 4 says; a descriptor names its base and states only what differs,
and resolves to the values recorded in fixtures/published_values.json, which tests/systems/published_values.py
writes."""

import json
import re

import pytest

from bert.mlperf_rules import DEFAULT_RULESET
from bert.system import load_descriptor
from compliance.checkers import system_desc_check
from tests.helpers.repo import REPO
from tests.systems.published_values import RECORD, changes, main, published_names, record_text, resolved_values

PUBLISHED_VALUES = json.loads(RECORD.read_text())
DESCRIPTORS = published_names()


@pytest.mark.parametrize("name", DESCRIPTORS)
def test_descriptor_validates_and_passes_the_system_description_checker(name, tmp_path):
    system = load_descriptor(REPO / "systems" / f"{name}.json")
    part = tmp_path / f"{name}.json"
    part.write_text(json.dumps(system.description))
    result = system_desc_check(part, DEFAULT_RULESET)
    assert result.passed, result.output


def test_the_published_systems_are_all_there():
    assert {"dgxa100_1x8", "dgxa100_8x8", "dgxa100_128x8_adam", "dgxa100_512x8_packed", "dgxh100_1x8",
            "h200_1x1"} <= set(DESCRIPTORS)


@pytest.mark.parametrize("name, gpus, gbs, lr, steps, interval", [
    ("dgxa100_1x8", 8, 448, 4.25e-4, 6700, 150_000),
    ("dgxa100_8x8", 64, 3072, 2.0992e-3, 1059, 175_000),
    ("dgxa100_512x8_packed", 4096, 16384, 3.3e-3, 470, 325_000),
    ("dgxh100_1x8", 8, 768, 9.6e-4, 3680, 150_000),
    ("dgxa100_128x8_adam", 1024, 16384, 3.93e-4, 179, 325_000),
])
def test_published_configurations(name, gpus, gbs, lr, steps, interval):
    system = load_descriptor(name)
    run = system.run
    assert (system.world_size, run.global_batch_size, run.optimizer.base_learning_rate) == (gpus, gbs, lr)
    assert run.optimizer.training_steps == steps and system.eval_interval_samples == interval
    assert run.init_checkpoint is not None and run.performance is not None


def test_the_seed_papers_configuration():
    system = load_descriptor("dgxa100_128x8_adam")
    run, opt = system.run, system.run.optimizer
    assert system.division == "open" and system.per_process_batch == 16
    assert (opt.name, opt.epsilon, opt.beta_1, opt.beta_2, opt.weight_decay_rate) == ("adam", 1e-9, 0.8004, 0.8175,
                                                                                      0.00289)
    assert (opt.warmup_steps, opt.start_warmup_step, opt.end_learning_rate) == (82, -16, 4.95e-5)
    assert run.balance == "stratified+local_presort" and run.clip == "bucketwise_before_allreduce"
    assert load_descriptor("dgxa100_512x8_packed").run.balance == "packed"


BASES = {"dgxa100_8x8": "dgxa100_1x8", "dgxa100_512x8_packed": "dgxa100_8x8", "dgxa100_128x8_adam": "dgxa100_8x8",
         "dgxh100_1x8": "dgxa100_1x8", "h200_1x1": "dgxh100_1x8", "cpu_tiny_adam": "cpu_tiny", "cpu_micro": "cpu_tiny"}


def test_the_published_descriptors_name_their_bases():
    named = {name: json.loads((REPO / "systems" / f"{name}.json").read_text()).get("base") for name in DESCRIPTORS}
    assert {name: base for name, base in named.items() if base} == BASES


@pytest.mark.parametrize("name", DESCRIPTORS)
def test_each_descriptor_resolves_to_its_recorded_values(name):
    """Every value each descriptor stood for when the record was written, field by field. A deliberate change to a
    published descriptor (or a base, or a default) rewrites the record in the same commit: `python -m
    tests.systems.published_values --write`; a change to a base shows here as the change of every descriptor that
    inherits it."""
    differ = changes({name: PUBLISHED_VALUES.get(name, {})}, {name: resolved_values(load_descriptor(name))})
    assert not differ, "field: recorded -> resolved (rewrite the record if this is meant):\n" + "\n".join(differ)


def test_the_record_is_what_its_writer_makes(capsys):
    assert RECORD.read_text() == record_text(), "run python -m tests.systems.published_values and --write if meant"
    assert main([]) == 0 and capsys.readouterr().out.endswith("is what the descriptors make\n")
    assert main(["--check"]) == 2


def test_the_writer_names_each_value_that_moved():
    recorded = {"a": {"run.x": 1, "run.y": "s"}, "gone": {"run.x": 1}}
    made = {"a": {"run.x": 2, "run.y": "s", "run.z": None}}
    assert changes(recorded, made) == ["a: run.x: 1 -> 2", "a: run.z: (absent) -> null", "gone: run.x: 1 -> (absent)"]


def _root(name: str) -> str:
    while name in BASES:
        name = BASES[name]
    return name


def test_no_note_is_written_twice_in_a_family():
    """A base states what its family (the descriptors that inherit from one root) shares once: no sentence of a
    note stands in two files of a family."""
    seen: dict[tuple[str, str], str] = {}
    for path in (REPO / "systems" / f"{name}.json" for name in DESCRIPTORS):
        notes = json.loads(path.read_text())["run"].get("notes", {})
        for text in (notes.values() if isinstance(notes, dict) else [notes]):
            for sentence in re.split(r"(?<=[.;:]) ", text or ""):
                key = (_root(path.stem), sentence)
                if len(sentence) >= 60:
                    assert key not in seen, f"{path.name} repeats {seen[key]}: {sentence!r}"
                    seen[key] = path.name
