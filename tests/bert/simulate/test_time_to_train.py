"""The time-to-train model against a case computed by hand, what it takes from the run block (the gradient's
dtype on the wire, the optimizer's implementation, a throughput estimate), and the convergence rule of the
trainer."""

import math

import numpy as np
import pytest
from click.testing import CliRunner

from bert.cli import main
from bert.cli.simulate import predicted_run_seconds
from bert.model.size import parameter_count
from bert.model.token_rounding import TokenSizes
from bert.optim.traffic import eager_lamb_bytes_per_parameter
from bert.simulate.flops import flops_per_sequence
from bert.simulate.time_to_train import (
    CALIBRATION_POINTS,
    CALIBRATION_TOLERANCE,
    calibrated_samples_per_s,
    converging_eval,
    predict,
)
from bert.system import Descriptor, load_descriptor
from compliance.checkers import rcp_reference

PERFORMANCE = {"gpu_samples_per_s": 100.0, "hbm_gb_s": 100.0, "intra_node_gb_s": 10.0, "inter_node_gb_s": 4.0,
               "link_latency_us": 5.0, "allreduce": "ring", "samples_to_converge": 1000}


def _small_cluster(clip: str, run: dict | None = None) -> Descriptor:
    return load_descriptor("cpu_micro").variant(
        {"processes_per_node": 2, "global_batch_size": 64, "clip": clip, "performance": PERFORMANCE,
         "bucket_cap_mb": 0.25, **(run or {}),
         "eval": {"target_accuracy": 0.72, "samples": 256, "interval_samples": 256, "batch_size": 64}},
        name="small_cluster", description={"number_of_nodes": "2"})


def test_a_small_case_computed_by_hand():
    system = _small_cluster("before_allreduce")
    equal_lengths = np.full(1000, 48)  # every rank gets the same work: the balance ratio is exactly 1
    p = predict(system, 1000, equal_lengths)
    params = parameter_count(system.model_config())
    assert p.parameters == params
    grad_bytes = 4 * params  # run.grad_comm_dtype fp32
    # 2 nodes x 2 GPUs, 16 sequences per GPU at 100/s; ring of 2 inside the node at 10 GB/s; each GPU's half
    # shard across the 2 nodes at 4/2 = 2 GB/s; 5 us per hop; the whole allreduce is exposed (before_allreduce).
    compute = 16 / 100
    intra = 2 * (1 / 2) * grad_bytes / 10e9 + 2 * 1 * 5e-6
    inter = 2 * (1 / 2) * (grad_bytes / 2) / 2e9 + 2 * 1 * 5e-6
    optimizer = params * eager_lamb_bytes_per_parameter(False) / 100e9  # bf16: no loss scaling
    step = compute + intra + inter + optimizer
    # Evals at 256, 512, 768, 1024 samples (steps 4, 8, 12, 16); the 4th is the first to reach 1000.
    evals, steps = 4, 16
    eval_s = (256 / 4) / (100 * 3)
    assert p.step.balance_ratio == pytest.approx(1.0)
    assert p.step.allreduce_s == pytest.approx(intra + inter)
    assert p.step.step_s == pytest.approx(step)
    assert (p.steps, p.evals, p.samples) == (steps, evals, 1024)
    assert p.time_to_train_s == pytest.approx(steps * step + evals * eval_s)


def test_overlap_hides_the_allreduce_behind_backward_when_the_clip_mode_allows_it():
    equal = np.full(1000, 48)
    before = predict(_small_cluster("before_allreduce"), 1000, equal).step
    bucketwise = predict(_small_cluster("bucketwise_before_allreduce"), 1000, equal).step
    after = predict(_small_cluster("after_allreduce"), 1000, equal).step
    system = _small_cluster("after_allreduce")
    buckets = math.ceil(parameter_count(system.model_config()) * 4 / (0.25 * 2**20))
    # One coalesced message before the allreduce; one per bucket otherwise, each paying the latencies of the
    # ring inside the node (2 hops) and across the 2 nodes (2 hops) at 5 us.
    assert bucketwise.allreduce_s == pytest.approx(before.allreduce_s + (buckets - 1) * 4 * 5e-6)
    assert after.allreduce_s == pytest.approx(bucketwise.allreduce_s)
    assert buckets > 1 and bucketwise.allreduce_s < 2 / 3 * before.compute_s  # backward outlasts the allreduce
    assert before.exposed_allreduce_s == pytest.approx(before.allreduce_s)
    # Overlapped with backward, only the last bucket's share of the allreduce still shows.
    assert bucketwise.exposed_allreduce_s == pytest.approx(bucketwise.allreduce_s / buckets)
    assert after.norm_s > 0 and bucketwise.norm_s == 0 and after.step_s > bucketwise.step_s


def test_bf16_communication_and_the_compiled_update_are_what_the_descriptor_runs():
    equal = np.full(1000, 48)
    base = predict(_small_cluster("before_allreduce"), 1000, equal).step
    fast = predict(_small_cluster("before_allreduce", {"grad_comm_dtype": "bf16",
                                                       "optimizer.implementation": "compiled"}), 1000, equal).step
    assert (base.gradient_bytes, fast.gradient_bytes) == (4, 2)
    latency = 2 * 2 * 5e-6  # two hops inside the node and two across, paid once: the bytes halve, not these
    assert fast.allreduce_s - latency == pytest.approx((base.allreduce_s - latency) / 2)
    assert fast.optimizer_bytes == 40 and fast.optimizer_s == pytest.approx(base.optimizer_s * 40 / 128)


def test_token_sizes_cost_the_compute_of_their_filler_tokens():
    equal = np.full(1000, 48)
    base = predict(_small_cluster("before_allreduce"), 1000, equal)
    rounded = predict(_small_cluster("before_allreduce", {"token_sizes": 4}), 1000, equal)
    # 16 sequences of 48 tokens a micro-batch (and 64 in an eval batch), each rounded up to its size.
    train_sizes, eval_sizes = (TokenSizes.spread(4, batch, 64) for batch in (16, 64))
    train_cost, eval_cost = (sizes.size_for(48 * batch, batch) / (48 * batch)
                             for sizes, batch in ((train_sizes, 16), (eval_sizes, 64)))
    assert train_cost > 1 and eval_cost > 1
    assert rounded.step.token_cost == pytest.approx(train_cost)
    assert rounded.step.compute_s == pytest.approx(base.step.compute_s * train_cost)
    assert rounded.step.optimizer_s == base.step.optimizer_s
    assert rounded.eval_s == pytest.approx(base.eval_s * eval_cost)


def test_an_estimated_throughput_comes_from_the_model_flops_and_says_so():
    performance = {**PERFORMANCE, "gpu_samples_per_s": None, "model_flops_utilization": 0.4, "peak_tflops": 2.0}
    system = load_descriptor("cpu_micro").variant({"performance": performance})
    lengths = np.full(1000, 48)
    p = predict(system, 1000, lengths)
    expected = 0.4 * 2e12 / flops_per_sequence(system.model_config(), lengths, system.run.max_predictions_per_seq)
    assert p.throughput.estimate and p.throughput.samples_per_s == pytest.approx(expected)
    assert "ESTIMATE" in p.throughput.source
    with pytest.raises(ValueError, match="either gpu_samples_per_s"):
        system.variant({"performance.gpu_samples_per_s": 5.0})


def test_the_run_stops_at_the_first_eval_past_the_convergence_point():
    # The seed paper: GBS 16384, evals every 325,000 samples, converged at 2,932,736 samples in 179 steps.
    assert converging_eval(2_932_736, 16384, 325_000) == (179, 9)
    assert converging_eval(2_414_421, 448, 150_000) == (5692, 17)


def test_simulate_command_prints_the_breakdown_and_the_prediction_last(tmp_path):
    system = _small_cluster("after_allreduce").write(tmp_path)
    result = CliRunner().invoke(main, ["simulate", "--system", str(system.path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[-1].startswith("predicted_time_to_train_s=")
    assert any("allreduce exposed" in line for line in lines)
    value = float(lines[-1].split("=")[1])
    expected = predict(system, 1000).time_to_train_s
    assert value == pytest.approx(expected, rel=1e-3)
    bare = system.variant({"performance": None}, name="bare").write(tmp_path)
    refused = CliRunner().invoke(main, ["simulate", "--system", str(bare.path)])
    assert refused.exit_code == 1 and "run.performance is not set" in refused.output


@pytest.mark.parametrize("point", CALIBRATION_POINTS, ids=lambda p: p.system)
def test_simulate_reproduces_each_figure_it_was_calibrated_on(point):
    """Published and CPU systems alike: the declared rate, through the whole model (load balance, allreduce,
    optimizer, evals), gives back the time it was calibrated on; and calibrating on it gives back the rate."""
    system = load_descriptor(point.system)
    seconds, why_not = predicted_run_seconds(system)
    assert why_not == "" and abs(seconds / point.seconds - 1) <= CALIBRATION_TOLERANCE, (seconds, point)
    samples = system.run.performance.samples_to_converge or round(rcp_reference(system.run.global_batch_size)
                                                                  .mean_samples)
    rate = calibrated_samples_per_s(system, point.seconds, samples)
    assert rate == pytest.approx(system.run.performance.gpu_samples_per_s, rel=0.01)
    faster = system.variant({"performance.gpu_samples_per_s": rate})
    assert predict(faster, samples).time_to_train_s == pytest.approx(point.seconds, rel=1e-6)


def test_calibrating_on_less_time_than_the_rest_takes_is_refused():
    system = _small_cluster("before_allreduce")
    floor = predict(system.variant({"performance.gpu_samples_per_s": 1e15}), 1000).time_to_train_s
    with pytest.raises(ValueError, match="no accelerator rate makes the prediction .* alone take"):
        calibrated_samples_per_s(system, floor / 2, 1000)


def test_a_run_end_to_end_adds_its_start_up_compile_warm_up_and_checkpoint():
    base = _small_cluster("after_allreduce")
    plain = predict(base.variant({"performance.startup_s": 10.0}), 1000)
    assert plain.untimed.total_s == 10.0 and plain.end_to_end_s == plain.time_to_train_s + 10.0
    assert plain.untimed.counted() == "start-up, compile warm-up and checkpoint counted"
    compiled = base.variant({"performance.startup_s": 10.0, "performance.compile_warmup_s": 30.0,
                             "performance.storage_gb_s": 2.0, "compile": True, "init_checkpoint": "phase1.pt"})
    p = predict(compiled, 1000)
    load_s = parameter_count(compiled.model_config()) * 4 / 2e9
    assert p.untimed.checkpoint_s == pytest.approx(load_s + p.eval_s)  # loaded, then evaluated before the clock
    assert p.end_to_end_s == pytest.approx(p.time_to_train_s + 10.0 + 30.0 + load_s + p.eval_s)
    unknown = predict(compiled.variant({"performance.compile_warmup_s": None}), 1000)
    assert unknown.untimed.counted() == ("NOT counted: compile warm-up (run.performance.compile_warmup_s not "
                                         "declared)")


def test_simulate_prints_the_run_end_to_end_and_says_when_the_converging_eval_passes_the_cap(tmp_path):
    system = _small_cluster("after_allreduce", {"max_samples": 1024, "performance.startup_s": 5.0}).write(tmp_path)
    within = CliRunner().invoke(main, ["simulate", "--system", str(system.path)])
    assert within.exit_code == 0 and within.stderr == ""
    lines = within.stdout.splitlines()
    assert lines[-2] == f"predicted_end_to_end_s={predict(system, 1000).end_to_end_s:.3f}"
    passed = CliRunner().invoke(main, ["simulate", "--system", str(system.path), "--samples-to-converge", "1100"])
    assert passed.exit_code == 0
    assert passed.stderr == ("warning: the eval that reaches the target at 1,100 samples runs at 1,280 samples, past "
                             "run.max_samples 1,024: the run would stop aborted before it; raise run.max_samples "
                             "(`mlperf-bert system check` says the least a closed run needs)\n")


def test_the_slurm_time_check_counts_each_runs_start_up():
    system = load_descriptor("cpu_micro")
    expected = predict(system, system.run.performance.samples_to_converge).end_to_end_s
    checked = CliRunner().invoke(main, ["system", "time-check", "cpu_micro", "--runs", "3"])
    assert checked.exit_code == 0
    assert checked.stdout.startswith(f"time: NEXP=3 run(s) x {expected / 60:.1f} min predicted (mlperf-bert simulate; "
                                     "start-up, compile warm-up and checkpoint counted) = ")
    assert expected >= system.run.performance.startup_s > 0
    gpu = CliRunner().invoke(main, ["system", "time-check", "dgxa100_1x8", "--runs", "10"])
    assert "(mlperf-bert simulate; NOT counted: compile warm-up (run.performance.compile_warmup_s not declared))" in \
        gpu.output
