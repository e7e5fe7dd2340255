"""The learning-rate schedule of the MLPerf reference, NVIDIA's implementation and the seed paper, in one
function: linear warmup that starts at `start_warmup_step` (which may be negative, so that step 0 already
has a warmed-up share) over `warmup_steps`, then polynomial decay from the base rate to `end_learning_rate`
at `decay_steps`, constant after.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LrSchedule:
    base_lr: float
    decay_steps: int
    warmup_steps: int = 0
    start_warmup_step: int = 0
    end_lr: float = 0.0
    power: float = 1.0

    def __call__(self, step: int) -> float:
        """The learning rate of update number `step` (0 for the first update)."""
        warmed = step - self.start_warmup_step
        if self.warmup_steps > 0 and warmed < self.warmup_steps:
            return self.base_lr * max(warmed, 0) / self.warmup_steps
        progress = min(step, self.decay_steps) / self.decay_steps
        return (self.base_lr - self.end_lr) * (1.0 - progress) ** self.power + self.end_lr
