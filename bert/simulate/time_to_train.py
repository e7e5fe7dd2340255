"""Time to train predicted from a descriptor: the step time from its parts, the steps from the convergence point.

`predict(descriptor, samples_to_converge, lengths)` returns a `Prediction`: the step's parts (`StepBreakdown`:
compute, the exposed allreduce, the optimizer, in seconds), the eval's, the steps and evals to the first eval past
`samples_to_converge`, and their sum, the time to train; `untimed` what a run adds outside its timed region (the
start-up, the compile warm-up, loading and evaluating the checkpoint), so that `end_to_end_s` is what its RESULT
line says. `gpu_throughput` is the
descriptor's compute rate (declared, or estimated from its FLOPs utilisation); `calibrated_samples_per_s` the rate
with which the model reproduces a measured time to train; `CALIBRATION_POINTS` the figures the published
descriptors' rates were calibrated on. The model, term by term: docs/simulate.md, "The model".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bert.compile_warmup import compiles_anything
from bert.data.balance_plans import attention_width
from bert.distributed.clipping import COMM_DTYPES
from bert.mlperf_rules import converging_eval
from bert.model.size import FP32_BYTES, gradient_buckets, parameter_count
from bert.model.token_rounding import token_sizes
from bert.optim.traffic import optimizer_bytes_per_parameter
from bert.performance_settings import PerformanceSpec
from bert.simulate.flops import flops_per_sequence
from bert.simulate.load_balance import named_lengths, simulate_balance
from bert.simulate.static_shapes import epoch_shapes
from bert.system import Descriptor

BACKWARD_SHARE = 2 / 3  # backward does twice the forward's matmul work
CALIBRATION_TOLERANCE = 0.05  # the model must reproduce each of its calibration points this closely
ROUNDED_BATCHES = 4096  # micro-batches drawn to measure the fillers' share


@dataclass(frozen=True)
class CalibrationPoint:
    """A time to train (run_start to run_stop) on which a published descriptor's rate was calibrated."""

    system: str
    seconds: float
    source: str


# Each published descriptor whose run.performance.gpu_samples_per_s is calibrated (not estimated from FLOPs), and the
# figure: `mlperf-bert simulate --system S --calibrate SECONDS` gave the rate, and the prediction stays within
# CALIBRATION_TOLERANCE of it (a test holds it so). Descriptors that inherit the rate predict other shapes with it.
CALIBRATION_POINTS = (
    CalibrationPoint("dgxa100_1x8", 16.9 * 60, "published: NVIDIA, MLPerf Training v2.1, 1x DGX A100 (8 GPUs), "
                     "closed division, 16.9 min"),
    CalibrationPoint("cpu_tiny", 291.3, "measured: run_and_time.sh cpu_tiny, seed 1, one thread a process, on the "
                     "2-core development machine at a load of 2 to 4 (2026-12-02)"),
    CalibrationPoint("cpu_micro", 4.652, "measured: run_and_time.sh cpu_micro, one thread, on the same machine at the "
                     "same load, same day"),
)


@dataclass(frozen=True)
class Throughput:
    """One accelerator's training sequences/s, and where the figure comes from."""

    samples_per_s: float
    source: str
    estimate: bool


def gpu_throughput(system: Descriptor, lengths: np.ndarray) -> Throughput:
    """The declared per-GPU throughput, or the estimate from a stated model FLOP utilisation of the peak."""
    perf = system.run.performance
    if perf.gpu_samples_per_s is not None:
        return Throughput(perf.gpu_samples_per_s, "declared", False)
    flops = flops_per_sequence(system.model_config(), lengths, system.run.max_predictions_per_seq)
    rate = perf.model_flops_utilization * perf.peak_tflops * 1e12 / flops
    return Throughput(rate, f"ESTIMATE: {perf.model_flops_utilization:.0%} model FLOP utilisation of "
                      f"{perf.peak_tflops:g} TFLOP/s at {flops / 1e9:.0f} GFLOP per sequence; "
                      "acceptance/gpu_check.sh measures it", True)


@dataclass(frozen=True)
class StepBreakdown:
    compute_s: float
    balance_ratio: float
    allreduce_s: float
    exposed_allreduce_s: float
    norm_s: float
    optimizer_s: float
    gradient_bytes: int  # per parameter, as the allreduce sends it
    optimizer_bytes: float  # per parameter, one update
    token_cost: float = 1.0  # the encoder's tokens per real token (run.token_sizes' fillers)

    @property
    def step_s(self) -> float:
        return self.compute_s + self.exposed_allreduce_s + self.norm_s + self.optimizer_s


@dataclass(frozen=True)
class Untimed:
    """What a run spends outside its timed region, in seconds (None: not declared, so not counted)."""

    startup_s: float | None  # run.performance.startup_s
    compile_s: float | None  # run.performance.compile_warmup_s of a run that compiles; 0 for one that does not
    checkpoint_s: float  # loading run.init_checkpoint (fp32 parameters at storage_gb_s) and its eval; 0 without

    @property
    def total_s(self) -> float:
        """What is known of it."""
        return (self.startup_s or 0.0) + (self.compile_s or 0.0) + self.checkpoint_s

    def unknown(self) -> str:
        """What it leaves out, in words ("" when nothing)."""
        missing = [f"{what} (run.performance.{name} not declared)" for what, name, value in
                   (("start-up", "startup_s", self.startup_s), ("compile warm-up", "compile_warmup_s", self.compile_s))
                   if value is None]
        return " and ".join(missing)

    def counted(self) -> str:
        """What of a run's untimed start a prediction with it counts, in words."""
        missing = self.unknown()
        return f"NOT counted: {missing}" if missing else "start-up, compile warm-up and checkpoint counted"


@dataclass(frozen=True)
class Prediction:
    system: str
    throughput: Throughput
    parameters: int
    step: StepBreakdown
    steps: int
    samples: int
    evals: int
    eval_s: float
    samples_to_converge: int
    untimed: Untimed

    @property
    def train_s(self) -> float:
        return self.steps * self.step.step_s

    @property
    def time_to_train_s(self) -> float:
        return self.train_s + self.evals * self.eval_s

    @property
    def end_to_end_s(self) -> float:
        """A whole run, as its RESULT line counts it: the time to train and what it does untimed (of which
        untimed.unknown() says what is not declared, so not counted)."""
        return self.time_to_train_s + self.untimed.total_s


def allreduce_seconds(nbytes: float, nodes: int, gpus_per_node: int, perf: PerformanceSpec,
                      messages: int = 1) -> float:
    """Hierarchical allreduce of `nbytes` per GPU in `messages` equal parts: a ring inside each node, then
    across nodes per shard."""
    latency = perf.link_latency_us * 1e-6 * messages
    seconds = 0.0
    if gpus_per_node > 1:
        g = gpus_per_node
        seconds += 2 * (g - 1) / g * nbytes / (perf.intra_node_gb_s * 1e9) + 2 * (g - 1) * latency
    if nodes > 1:
        shard, bandwidth = nbytes / gpus_per_node, perf.inter_node_gb_s * 1e9 / gpus_per_node
        if perf.allreduce == "ring":
            seconds += 2 * (nodes - 1) / nodes * shard / bandwidth + 2 * (nodes - 1) * latency
        else:  # NCCL's double binary tree: the full shard up and down, log-depth latency
            seconds += 2 * shard / bandwidth + 2 * math.ceil(math.log2(nodes)) * latency
    return seconds


def step_breakdown(system: Descriptor, parameters: int, balance_ratio: float, samples_per_s: float,
                   token_cost: float = 1.0) -> StepBreakdown:
    run, perf = system.run, system.run.performance
    micro_s = system.per_process_batch / samples_per_s * balance_ratio * token_cost
    compute = micro_s * run.gradient_accumulation_steps
    buckets, clip = gradient_buckets(parameters, system.run.bucket_cap_mb), run.clip_kind
    messages = buckets if clip.per_bucket else 1
    allreduce = 0.0
    if system.world_size > 1:
        allreduce = allreduce_seconds(parameters * COMM_DTYPES[run.grad_comm_dtype].itemsize, system.nodes,
                                      run.processes_per_node, perf, messages)
    hbm = perf.hbm_gb_s * 1e9
    # Bucket by bucket, the allreduce hides behind the rest of the backward but for the last bucket's.
    exposed = max(allreduce - BACKWARD_SHARE * micro_s, allreduce / buckets) if clip.per_bucket else allreduce
    norm = parameters * FP32_BYTES / hbm if clip.norm_after_allreduce else 0.0
    optimizer_bytes = optimizer_bytes_per_parameter(run.optimizer, run.precision)
    return StepBreakdown(compute, balance_ratio, allreduce, exposed if allreduce else 0.0, norm,
                         parameters * optimizer_bytes / hbm, COMM_DTYPES[run.grad_comm_dtype].itemsize, optimizer_bytes,
                         token_cost)


def token_cost(count: int, max_len: int, lengths: np.ndarray, batch: int, seed: int = 0) -> float:
    """The encoder's tokens per real token of batches of `batch` when `count` token sizes (run.token_sizes) round
    them, for sequences of up to `max_len` tokens (1: off)."""
    sizes = token_sizes(count, batch, max_len)
    if sizes is None:
        return 1.0
    return epoch_shapes(lengths, batch * ROUNDED_BATCHES, batch, [sizes], seed)[0].cost


@dataclass(frozen=True)
class _Costs:
    """What a prediction takes from the descriptor besides the accelerator's rate: the costly parts (the
    load-balance simulation, the fillers' share), measured once."""

    balance_ratio: float
    parameters: int
    train_token_cost: float
    eval_token_cost: float
    steps: int
    evals: int


def _costs(system: Descriptor, samples_to_converge: int, lengths: np.ndarray, balance_steps: int, seed: int) -> _Costs:
    run = system.run
    ratio = 1.0
    if system.world_size > 1:
        ratio = simulate_balance(lengths, system.nodes, run.processes_per_node, system.per_process_batch,
                                 system.balance, steps=balance_steps, seed=seed, bins=run.length_bins,
                                 unpadded=run.unpadded,
                                 attention_width=attention_width(system.model_config().hidden_size),
                                 deal_how=run.presort_deal, lookahead=run.balance_lookahead).step_time_ratio
    steps, evals = converging_eval(samples_to_converge, run.global_batch_size, system.eval_interval_samples)
    costs = [token_cost(run.token_sizes, run.max_seq_length, lengths, batch, seed)
             for batch in (system.per_process_batch, run.eval.batch_size)]
    return _Costs(ratio, parameter_count(system.model_config()), *costs, steps, evals)


def _prediction(system: Descriptor, costs: _Costs, throughput: Throughput, samples_to_converge: int) -> Prediction:
    run = system.run
    step = step_breakdown(system, costs.parameters, costs.balance_ratio, throughput.samples_per_s,
                          costs.train_token_cost)
    eval_s = (math.ceil(run.eval.samples / system.world_size)
              / (throughput.samples_per_s * run.performance.eval_speedup) * costs.eval_token_cost)
    return Prediction(system.name, throughput, costs.parameters, step, costs.steps,
                      costs.steps * run.global_batch_size, costs.evals, eval_s, samples_to_converge,
                      untimed_seconds(system, costs.parameters, eval_s))


def untimed_seconds(system: Descriptor, parameters: int, eval_s: float) -> Untimed:
    """The untimed part of a run of `system`: the declared start-up and compile warm-up, and the checkpoint's load
    (its fp32 parameters from storage) and eval, modelled."""
    perf, run = system.run.performance, system.run
    compile_s = perf.compile_warmup_s if compiles_anything(run, run.optimizer) else 0.0
    checkpoint_s = parameters * FP32_BYTES / (perf.storage_gb_s * 1e9) + eval_s if run.init_checkpoint else 0.0
    return Untimed(perf.startup_s, compile_s, checkpoint_s)


def _lengths(system: Descriptor, lengths: np.ndarray | None, seed: int) -> np.ndarray:
    if system.run.performance is None:
        raise ValueError(f"{system.path}: run.performance is not set; declare the system's figures to simulate it")
    if lengths is not None:
        return lengths
    return named_lengths("mlperf-wiki", count=50_000, seed=seed, max_len=system.run.max_seq_length)


def predict(system: Descriptor, samples_to_converge: int, lengths: np.ndarray | None = None,
            balance_steps: int = 32, seed: int = 0) -> Prediction:
    """The prediction for `system` (which must have run.performance); `lengths`: the sequence lengths the
    load-balance simulator draws from (default: the MLPerf Wikipedia shape)."""
    lengths = _lengths(system, lengths, seed)
    costs = _costs(system, samples_to_converge, lengths, balance_steps, seed)
    return _prediction(system, costs, gpu_throughput(system, lengths), samples_to_converge)


def calibrated_samples_per_s(system: Descriptor, seconds: float, samples_to_converge: int,
                             lengths: np.ndarray | None = None, balance_steps: int = 32, seed: int = 0) -> float:
    """The accelerator's training rate (run.performance.gpu_samples_per_s) with which the prediction of `system`
    is `seconds`, a published or measured time to train of this very system: the rate of its compute alone, once
    what the model adds to it (the load-balance ratio, the allreduce, the optimizer, the evals) is taken out of the
    end-to-end time. Raises ValueError when no rate reaches `seconds` (the rest alone takes longer)."""
    lengths = _lengths(system, lengths, seed)
    costs = _costs(system, samples_to_converge, lengths, balance_steps, seed)

    def seconds_at(rate: float) -> float:
        return _prediction(system, costs, Throughput(rate, "calibrating", False), samples_to_converge).time_to_train_s

    low, high = 1e-6, 1e12  # sequences/s; the time falls as the rate grows
    if seconds_at(high) >= seconds:
        raise ValueError(f"{system.name}: no accelerator rate makes the prediction {seconds:g} s: the allreduce, the "
                         f"optimizer and the evals alone take {seconds_at(high):.1f} s")
    for _ in range(200):  # bisection on the log scale: far below a thousandth of a per cent
        middle = math.sqrt(low * high)
        low, high = (middle, high) if seconds_at(middle) > seconds else (low, middle)
    return math.sqrt(low * high)


def breakdown_lines(p: Prediction, worker: str = "GPU") -> list[str]:
    """The table `mlperf-bert simulate` prints (`worker`: what runs one rank, a GPU or a CPU process); the last
    line is predicted_time_to_train_s=<x>."""
    s = p.step
    rows = [
        (f"sequences/s per {worker}", f"{p.throughput.samples_per_s:.1f} ({p.throughput.source})"),
        ("parameters", f"{p.parameters:,}"),
        ("compute per step (balanced x ratio)", f"{s.compute_s * 1e3:.2f} ms (x{s.balance_ratio:.3f}"
         + (f", x{s.token_cost:.3f} for run.token_sizes' fillers)" if s.token_cost != 1 else ")")),
        ("allreduce per step", f"{s.allreduce_s * 1e3:.2f} ms ({s.gradient_bytes} bytes per gradient element)"),
        ("allreduce exposed", f"{s.exposed_allreduce_s * 1e3:.2f} ms"),
        ("global norm", f"{s.norm_s * 1e3:.2f} ms"),
        ("optimizer", f"{s.optimizer_s * 1e3:.2f} ms ({s.optimizer_bytes:.0f} bytes per parameter)"),
        ("step", f"{s.step_s * 1e3:.2f} ms"),
        ("samples to converge", f"{p.samples_to_converge:,}"),
        ("steps (to the converging eval)", f"{p.steps:,} ({p.samples:,} samples)"),
        ("training", f"{p.train_s:.2f} s"),
        ("evals", f"{p.evals} x {p.eval_s * 1e3:.2f} ms = {p.evals * p.eval_s:.2f} s"),
        ("time to train", f"{p.time_to_train_s:.2f} s ({p.time_to_train_s / 60:.2f} min)"),
        *_untimed_rows(p),
    ]
    width = max(len(name) for name, _ in rows)
    return [f"{p.system}:"] + [f"  {name:<{width}}  {value}" for name, value in rows] + [
        f"predicted_end_to_end_s={p.end_to_end_s:.3f}", f"predicted_time_to_train_s={p.time_to_train_s:.3f}"]


def _untimed_rows(p: Prediction) -> list[tuple[str, str]]:
    u = p.untimed

    def seconds(value: float | None, name: str) -> str:
        return f"{value:.2f} s" if value is not None else f"not counted (run.performance.{name} not declared)"

    missing = u.unknown()
    return [("start-up and exit (untimed)", seconds(u.startup_s, "startup_s")),
            ("compile warm-up (untimed)", seconds(u.compile_s, "compile_warmup_s")),
            ("checkpoint load and eval (untimed)", f"{u.checkpoint_s:.2f} s"),
            ("a run end to end (its RESULT)", f"{p.end_to_end_s:.2f} s ({p.end_to_end_s / 60:.2f} min)"
             + (f"; without {missing}" if missing else ""))]
