"""What a closed descriptor may not be (bert.closed_division): not the benchmark (model, sequence length, target,
optimizer), a sample cap below the reference's convergence plus an eval interval, a batch size above every RCP.
`mlperf-bert system check` and the pre-flight refuse each in one line naming the field; a closed log of a micro
model on sequences of 64 never starts."""

import json

import pytest
from click.testing import CliRunner

import bert.launch.preflight as pf
from bert.cli import main
from bert.closed_division import descriptor_problems
from bert.mlperf_rules import DEFAULT_RULESET, mlperf_eval_interval
from bert.rcp import convergence, sample_cap_floor
from bert.system import load_descriptor
from bert.typed_config import ConfigError
from tests.helpers.faults import wrapper

CLOSED = ("dgxa100_1x8", "dgxa100_8x8", "dgxa100_512x8_packed", "dgxh100_1x8", "h200_1x1")


def _lying_micro(folder):
    """cpu_micro (1 layer, sequence 64, target 0.06) in the closed division under a DGX H100's name."""
    return load_descriptor("cpu_micro").variant(
        name="lying_micro", description={"division": "closed", "system_name": "NVIDIA DGX H100"}).write(folder)


def _check(path) -> tuple[int, list[str]]:
    result = CliRunner().invoke(main, ["system", "check", str(path)])
    return result.exit_code, [line for line in result.stderr.splitlines() if ": note: " not in line]


def test_the_published_closed_descriptors_are_the_benchmark_with_a_cap_that_lets_runs_converge():
    for name in CLOSED:
        assert descriptor_problems(load_descriptor(name)) == [], name


def test_a_closed_micro_model_is_refused_by_system_check_one_line_per_field(tmp_path):
    system = _lying_micro(tmp_path)
    code, lines = _check(system.path)
    assert code == 1
    fields = [line.removeprefix(f"{system.path}: ").split(":")[0] for line in lines]
    assert fields == ["run.model", "run.max_seq_length", "run.max_predictions_per_seq", "run.eval.target_accuracy",
                      "run.eval.samples"]
    assert "'micro' is not the closed division's model: vocab_size 4096 (BERT-large: 30522), hidden_size 64" in lines[0]
    assert lines[1].endswith('run.max_seq_length: 64, but the closed division fixes it at 512: use 512, or set '
                             'system.division to "open"')
    assert "run.eval.target_accuracy: 0.06, but the closed division fixes it at 0.72" in lines[3]


@pytest.mark.parametrize("change, field", [
    ({"model_overrides": {"gelu": "erf", "num_layers": 12}}, "run.model"),
    ({"max_seq_length": 128}, "run.max_seq_length"),
    ({"eval.target_accuracy": 0.7}, "run.eval.target_accuracy"),
])
def test_each_field_of_the_benchmark_is_named_alone(change, field):
    problems = descriptor_problems(load_descriptor("dgxa100_1x8").variant(change))
    assert [name for name, _ in problems] == [field]


def test_the_optimizers_kind_is_refused_where_the_descriptor_loads(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_descriptor("dgxa100_1x8").variant({"optimizer.name": "adam", "optimizer.implementation": "eager"})
    assert info.value.field == "run.optimizer.name" and "the closed division requires \"lamb\"" in str(info.value)


def test_the_pre_flight_refuses_the_closed_micro_run_before_anything_starts(tmp_path, small_dataset, cpu_env):
    system = _lying_micro(tmp_path / "systems")
    outcome = pf.preflight(system, 0, "localhost", small_dataset, tmp_path / "logs")
    assert [p.split(": ")[1] for p in outcome.problems] == [
        "run.model", "run.max_seq_length", "run.max_predictions_per_seq", "run.eval.target_accuracy",
        "run.eval.samples"]
    env = dict(cpu_env, NEXP="3", LOGDIR=str(tmp_path / "logs"), DATADIR=str(small_dataset))
    proc = wrapper(system.path, env)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    refused = [line for line in proc.stderr.splitlines() if line.startswith("pre-flight: ")]
    assert len(refused) == 5 and "run.max_seq_length: 64" in refused[1]
    assert "RESULT" not in proc.stdout and not (tmp_path / "logs").exists()


def _site_at_3072(folder, **run) -> object:
    """A site's 8-node DGX H100 at batch 3072 with NVIDIA's 8x8 schedule, its cap inherited from the 768 base."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "site_3072.json"
    path.write_text(json.dumps({"base": "dgxh100_1x8", "system": {"number_of_nodes": "8"}, "run": {
        "global_batch_size": 3072, "optimizer": {"base_learning_rate": 0.0020992, "training_steps": 1059},
        "performance": {"inter_node_gb_s": 400.0}, **run}}))
    return path


def test_a_cap_below_the_references_convergence_plus_an_eval_interval_is_refused(tmp_path):
    reference = convergence(3072, DEFAULT_RULESET)
    floor = sample_cap_floor(reference, mlperf_eval_interval(3072))
    code, lines = _check(_site_at_3072(tmp_path / "low"))
    assert code == 1 and len(lines) == 1
    assert "run.max_samples: 2,826,240 is below the reference's samples to converge at global batch 3072" in lines[0]
    assert f"mean {reference.mean:,.0f}" in lines[0] and f"= {floor:,}" in lines[0]
    code, lines = _check(_site_at_3072(tmp_path / "enough", max_samples=floor))
    assert code == 0 and lines == []


def test_a_closed_batch_above_every_rcp_is_refused():
    big = load_descriptor("dgxa100_512x8_packed").variant({"global_batch_size": 32768, "max_samples": 10_000_000},
                                                          description={"number_of_nodes": "1024"})
    ((field, problem),) = descriptor_problems(big)
    assert field == "run.global_batch_size" and "above the largest reference convergence point (16384" in problem
