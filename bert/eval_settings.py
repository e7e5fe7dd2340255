"""The eval's settings: a descriptor's run.eval block, read by bert.eval (the eval set) and bert.train (when to
evaluate, when to stop)."""

from __future__ import annotations

from dataclasses import dataclass

from bert.mlperf_rules import EVAL_SAMPLES, MLPERF_TARGET_ACCURACY, mlperf_eval_interval
from bert.typed_config import ranged


@dataclass(frozen=True, kw_only=True)
class EvalSpec:
    target_accuracy: float = ranged(0, 1, low_open=True, high_open=True, default=MLPERF_TARGET_ACCURACY)
    """The masked-LM accuracy at which the run stops with status success (MLPerf's target: 0.720). MLPerf key
    target_accuracy."""
    samples: int = ranged(1, default=EVAL_SAMPLES)
    """Eval samples, the first of the eval file (MLPerf: the 10,000 of eval_10k). MLPerf key eval_samples."""
    interval_samples: int | None = ranged(1, default=None, note="or null for the MLPerf formula")
    """Training samples between evals; null: the MLPerf formula of the global batch size (150,000 at 448,
    175,000 at 3072, 325,000 at 16384)."""
    batch_size: int = ranged(1, default=128)
    """Eval sequences per batch, per process."""

    def interval(self, global_batch_size: int) -> int:
        """Training samples between evals at `global_batch_size`."""
        return self.interval_samples if self.interval_samples is not None else mlperf_eval_interval(global_batch_size)
