"""The optimizer's settings: a descriptor's run.optimizer block, read by bert.optim.factory (the optimizer and its
learning-rate schedule) and bert.optim.traffic (the bytes of one update, for the simulator). What the named
optimizer is, and what each part of the harness does with it, is its kind (`kind`, bert.optim.kinds)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bert.optim.kinds import DEFAULT_OPTIMIZER, OPTIMIZERS, OptimizerKind, OptimizerName
from bert.typed_config import ranged


@dataclass(frozen=True, kw_only=True)
class OptimizerSpec:
    name: OptimizerName = DEFAULT_OPTIMIZER
    """The optimizer: "lamb" (the closed division's, as the reference's LAMB) or "adam" (AdamW, decoupled weight
    decay; open division only, its betas, epsilon and weight decay logged under the LAMB keys)."""
    base_learning_rate: float = ranged(0, low_open=True)
    """The peak learning rate, reached at the end of the warm-up. MLPerf key opt_base_learning_rate (tunable)."""
    epsilon: float = ranged(0, low_open=True, default=1e-6)
    """Added to the root of the second moment. MLPerf key opt_lamb_epsilon (tunable)."""
    beta_1: float = ranged(0, 1, high_open=True, default=0.9)
    """Decay of the first moment. MLPerf key opt_lamb_beta_1 (tunable)."""
    beta_2: float = ranged(0, 1, high_open=True, default=0.999)
    """Decay of the second moment. MLPerf key opt_lamb_beta_2 (tunable)."""
    weight_decay_rate: float = ranged(0, default=0.01)
    """Weight decay, never of LayerNorm parameters or biases (the closed division's rule). MLPerf key
    opt_lamb_weight_decay_rate (tunable)."""
    end_learning_rate: float = ranged(0, default=0.0)
    """The learning rate the decay ends at, after training_steps (the reference's is 0; the seed paper's ADAM
    decays to a positive one)."""
    warmup_steps: int = ranged(0, default=0)
    """Steps of linear warm-up, counted from start_warmup_step. MLPerf keys opt_learning_rate_warmup_steps and
    num_warmup_steps (tunable)."""
    start_warmup_step: int = ranged(high=0, default=0, note="a positive start gives the reference a negative "
                                    "learning rate before it; start the warm-up at 0 or before")
    """The step the warm-up starts at: 0, or negative when it began before the first step (the reference's
    phase-2 flags: -76). MLPerf key start_warmup_step (tunable)."""
    training_steps: int = ranged(1)
    """The decay horizon in steps: the learning rate reaches end_learning_rate there. MLPerf key
    opt_learning_rate_training_steps (tunable)."""
    poly_power: float = ranged(0, low_open=True, default=1.0)
    """The power of the polynomial decay; the closed division fixes it at 1.0 (linear)."""
    implementation: Literal["eager", "compiled"] = "eager"
    """How LAMB's update runs (bert.optim.lamb, never apex's FusedLAMB): "eager" in foreach kernels, or
    "compiled", the same update through torch.compile, compiled before the clock. AdamW runs "eager" only: torch's
    fused kernel on CUDA."""

    @property
    def kind(self) -> OptimizerKind:
        """The optimizer `name` names (a name read from a descriptor always has one: bert.kind_tables)."""
        return OPTIMIZERS[self.name]

    def problems(self) -> list[tuple[str, str]]:
        kind = self.kind
        if self.implementation not in kind.implementations:
            ways = " or ".join(f'"{name}" ({what})' for name, what in kind.implementations.items())
            return [("implementation", f'{kind.title} does not run "{self.implementation}": it runs {ways}; use '
                                       "one of those")]
        return []
