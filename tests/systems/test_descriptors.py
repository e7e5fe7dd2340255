"""Every descriptor in systems/ validates and its system-description part passes the official checker; the
published configurations say what MLPerf_BERT.md section 4 says."""

import json

import pytest

from bert.mlperf_rules import DEFAULT_RULESET
from bert.system import load_system
from compliance.checkers import system_desc_check
from tests.helpers.repo import REPO

DESCRIPTORS = sorted(p.stem for p in (REPO / "systems").glob("*.json"))


@pytest.mark.parametrize("name", DESCRIPTORS)
def test_descriptor_validates_and_passes_the_system_description_checker(name, tmp_path):
    system = load_system(REPO / "systems" / f"{name}.json")
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
    system = load_system(name)
    run = system.run
    assert (system.world_size, run.global_batch_size, run.optimizer.base_learning_rate) == (gpus, gbs, lr)
    assert run.optimizer.training_steps == steps and system.eval_interval_samples == interval
    assert run.init_checkpoint is not None and run.performance is not None


def test_the_seed_papers_configuration():
    system = load_system("dgxa100_128x8_adam")
    run, opt = system.run, system.run.optimizer
    assert system.division == "open" and system.per_process_batch == 16
    assert (opt.name, opt.epsilon, opt.beta_1, opt.beta_2, opt.weight_decay_rate) == ("adam", 1e-9, 0.8004, 0.8175,
                                                                                      0.00289)
    assert (opt.warmup_steps, opt.start_warmup_step, opt.end_learning_rate) == (82, -16, 4.95e-5)
    assert run.balance == "stratified+local_presort" and run.clip == "bucketwise_before_allreduce"
    assert load_system("dgxa100_512x8_packed").run.balance == "packed"
