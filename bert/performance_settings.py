"""The simulator's settings: a descriptor's run.performance block, the declared hardware figures from which
`mlperf-bert simulate` (bert.simulate.time_to_train) predicts the time to train. They lie below the descriptor,
which composes them, as every component's settings do; the simulator, which reads the whole descriptor, lies above
it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bert.typed_config import ranged


@dataclass(frozen=True, kw_only=True)
class PerformanceSpec:
    """Declared hardware figures; the notes say where each comes from. The bytes the gradient and the optimizer
    move come from the run block (grad_comm_dtype, optimizer), not from here."""

    gpu_samples_per_s: float | None = ranged(0, low_open=True, default=None)
    """Training sequences/s of one accelerator, a published or measured figure of this harness's kind of run; or
    null, and model_flops_utilization and peak_tflops: an estimate from the model's FLOPs per sequence at the
    MLPerf length mix."""
    model_flops_utilization: float | None = ranged(0, 1, low_open=True, default=None)
    """The share of peak_tflops the model's FLOPs reach, for the estimate."""
    peak_tflops: float | None = ranged(0, low_open=True, default=None)
    """The accelerator's dense bf16/fp16 rate in TFLOP/s, from its datasheet, for the estimate."""
    eval_speedup: float = ranged(0, low_open=True, default=3.0)
    """Eval throughput over training throughput (forward only: about 3)."""
    hbm_gb_s: float = ranged(0, low_open=True)
    """Accelerator memory bandwidth in GB/s: the optimizer step is memory-bound."""
    intra_node_gb_s: float = ranged(0)
    """Per-accelerator allreduce bus bandwidth in a node in GB/s (NVLink; 0: one accelerator a node)."""
    inter_node_gb_s: float = ranged(0, default=0.0)
    """Per-node network bandwidth in GB/s, all NICs together (0: a single node)."""
    link_latency_us: float = ranged(0, default=5.0)
    """Latency of one hop of an allreduce step, in microseconds."""
    allreduce: Literal["ring", "tree"] = "ring"
    """The inter-node allreduce algorithm (NCCL_ALGO)."""
    samples_to_converge: int | None = ranged(1, default=None)
    """Training samples to the target; null: the reference convergence point of the global batch size."""
    startup_s: float | None = ranged(0, default=None)
    """Seconds of each run outside its timed region (run_start to run_stop) besides compiling and the checkpoint:
    the launcher and the processes starting, importing torch, the process groups, the model, the dataset and the
    exit. Measured as a run's RESULT seconds minus its log's run_start to run_stop (a run that compiles nothing and
    starts from no checkpoint: benchmarks/end_to_end_time.py); null: unknown, which `simulate` and the Slurm time
    check say."""
    compile_warmup_s: float | None = ranged(0, default=None)
    """Seconds a run that compiles (run.compile, or a compiled optimizer) spends compiling before the clock: its
    log's compile_warmup_seconds; null: unknown, said where it counts."""
    storage_gb_s: float = ranged(0, low_open=True, default=1.0)
    """Read rate in GB/s of the storage run.init_checkpoint is loaded from before the clock (the checkpoint modelled
    as the model's fp32 parameters); the checkpoint's eval that follows is modelled as one eval."""

    def problems(self) -> list[tuple[str, str]]:
        estimate = self.model_flops_utilization is not None or self.peak_tflops is not None
        if (self.gpu_samples_per_s is None) != estimate or \
                (self.model_flops_utilization is None) != (self.peak_tflops is None):
            return [("gpu_samples_per_s", "give either gpu_samples_per_s (published or measured) or both "
                                          "model_flops_utilization and peak_tflops (an estimate), not both and not "
                                          "neither")]
        return []
