"""The compiled LAMB update against the eager one, in one process: the peer is bert.optim.lamb's eager update
(foreach kernels), ours the same function through torch.compile (run.optimizer.implementation "compiled").
Both step identical copies of a model's parameters in the reference groups, with the same gradients, a new
learning rate and a clip factor (handed over as the step's clipping hands it, bert.distributed.clipping) each
update; they alternate over rounds after a warm-up that compiles, each side's CPU and wall time kept apart, and the
compiled weights must stay within DRIFT_TOLERANCE of the eager ones."""

from __future__ import annotations

import copy
import time

import torch

from benchmarks.common.timing import sync
from bert.optim.factory import parameter_groups
from bert.optim.lamb import Lamb

# The largest difference allowed between the two sides' weights, relative to the largest weight: float
# rounding of one fused computation against another, far below any update's size.
DRIFT_TOLERANCE = 1e-5


class LambSide:
    """One side: its optimizer over its copy of the parameters, and the time its updates took."""

    def __init__(self, name: str, model: torch.nn.Module, compiled: bool):
        self.name = name
        self.optimizer = Lamb(parameter_groups(model, 0.01), lr=1e-3, compiled=compiled)
        self.params = [p for group in self.optimizer.param_groups for p in group["params"]]
        self.cpu_seconds, self.wall_seconds, self.updates = 0.0, 0.0, 0
        self.clip_factor = torch.ones((), device=self.params[0].device)

    def run(self, grads: list[list[torch.Tensor]], first: int, count: int, device: torch.device) -> None:
        """Updates `first` to `first + count` (exclusive), with gradient set k % len(grads) and learning rate
        1e-3 / (1 + k) at update k; the device's work is included in the time."""
        sync(device)
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        for k in range(first, first + count):
            for p, g in zip(self.params, grads[k % len(grads)]):
                p.grad = g  # shared, read-only: the update does not write the gradient without loss scaling
            for group in self.optimizer.param_groups:
                group["lr"] = 1e-3 / (1 + k)
            self.optimizer.clip_factor = self.clip_factor  # as the step hands over its clipping (run.clip)
            self.optimizer.step()
        sync(device)
        self.cpu_seconds += time.process_time() - start_cpu
        self.wall_seconds += time.perf_counter() - start_wall
        self.updates += count

    def seconds_per_update(self, clock: str) -> float:
        """Mean seconds per timed update, by the process's CPU time ("cpu") or the wall ("wall")."""
        return (self.cpu_seconds if clock == "cpu" else self.wall_seconds) / self.updates


class LambPair:
    """The eager side on `model`'s parameters, the compiled side on a copy of them (the model is updated)."""

    def __init__(self, model: torch.nn.Module):
        self.eager = LambSide("eager", model, compiled=False)
        self.compiled = LambSide("compiled", copy.deepcopy(model), compiled=True)
        self.grads = [[torch.randn_like(p) * 1e-3 for p in self.eager.params] for _ in range(2)]
        self.compile_seconds = 0.0
        self.next_update = 0

    @property
    def sides(self) -> tuple[LambSide, LambSide]:
        return self.eager, self.compiled

    @property
    def parameters(self) -> int:
        return sum(p.numel() for p in self.eager.params)

    def warm_up(self, device: torch.device) -> None:
        """One untimed update each, the compiled one first (it compiles: one graph per parameter group)."""
        started = time.perf_counter()
        self.compiled.run(self.grads, 0, 1, device)
        self.compile_seconds = time.perf_counter() - started
        self.eager.run(self.grads, 0, 1, device)
        for side in self.sides:
            side.cpu_seconds, side.wall_seconds, side.updates = 0.0, 0.0, 0
        self.next_update = 1

    def round(self, index: int, updates: int, device: torch.device) -> None:
        """`updates` timed updates per side, the order flipping from one round to the next."""
        for side in self.sides if index % 2 == 0 else self.sides[::-1]:
            side.run(self.grads, self.next_update, updates, device)
        self.next_update += updates

    def drift(self) -> tuple[float, float]:
        """(the largest difference between the two sides' weights, the largest weight of the eager side)."""
        with torch.no_grad():
            difference = max(float((a - b).abs().max()) for a, b in zip(self.eager.params, self.compiled.params))
            scale = max(float(p.abs().max()) for p in self.eager.params)
        return difference, scale

    def agree(self) -> bool:
        difference, scale = self.drift()
        return difference <= DRIFT_TOLERANCE * scale

    def ratio(self, clock: str) -> float:
        """Compiled seconds per update over eager (below 1: compiling pays)."""
        return self.compiled.seconds_per_update(clock) / self.eager.seconds_per_update(clock)
