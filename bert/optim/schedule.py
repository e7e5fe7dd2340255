"""The learning-rate schedule of the MLPerf reference, NVIDIA's implementation and the seed paper, in one
function: linear warmup that starts at `start_warmup_step` (which may be negative, so that step 0 already
has a warmed-up share) over `warmup_steps`, then polynomial decay from the base rate to `end_learning_rate`
at `decay_steps`, constant after. As the reference's `optimization.create_optimizer` (whose end rate is 0),
the warm-up rate is base_lr * (step - start) / warmup_steps, and the decay counts from step 0, not from the
warm-up's end. A positive start is refused: the reference's rate is negative before it.
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

    def __post_init__(self) -> None:
        if self.start_warmup_step > 0:
            raise ValueError(f"start_warmup_step {self.start_warmup_step} is positive: the reference's learning "
                             "rate would be negative before it; start the warm-up at 0 or before")

    def __call__(self, step: int) -> float:
        """The learning rate of update number `step` (0 for the first update)."""
        warmed = step - self.start_warmup_step
        if self.warmup_steps > 0 and warmed < self.warmup_steps:
            return self.base_lr * warmed / self.warmup_steps
        progress = min(step, self.decay_steps) / self.decay_steps
        return (self.base_lr - self.end_lr) * (1.0 - progress) ** self.power + self.end_lr
