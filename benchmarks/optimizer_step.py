"""CPU time of one LAMB update: the eager foreach update against the same update compiled, in one process.

The peer is bert.optim.lamb's eager update (foreach kernels, about 13 passes over memory, what runs without
apex); ours is the same function through torch.compile (run.optimizer.implementation "compiled"). Both step
identical copies of a BERT's parameters, in the reference groups, with the same gradients and a new learning
rate each update; they alternate over rounds, after a warm-up that compiles, and the final weights are held
to each other (float tolerance). The traffic lines are bert.optim.traffic's: the eager update's bytes per
parameter counted, the fused model's for the compiled one (what `mlperf-bert simulate` uses).
The last line is `compiled_over_eager_lamb=<compiled CPU s per update / eager>` (goal: below 1).

    python benchmarks/optimizer_step.py                       # BERT-base, 4 rounds of 5 updates
    python benchmarks/optimizer_step.py --model tiny --rounds 2 --updates 2 --no-results   # a quick check

Results (with date, machine and torch version) go to benchmarks/optimizer_step_results.md.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import torch

from bert.model.config import named_config
from bert.model.pretraining import BertForPreTraining
from bert.optim.factory import parameter_groups
from bert.optim.lamb import Lamb
from bert.optim.traffic import FP32_BYTES, FUSED_LAMB_TENSORS, eager_lamb_bytes_per_parameter

RESULTS = Path(__file__).with_name("optimizer_step_results.md")


def parse_args(argv: list[str]) -> argparse.Namespace:
    from results_file import add_no_results_flag  # beside this script

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="base", help="a named model config (its parameters are what is updated)")
    p.add_argument("--updates", type=int, default=5, help="timed updates per side per round")
    p.add_argument("--rounds", type=int, default=4, help="alternations")
    p.add_argument("--threads", type=int, default=1, help="CPU threads")
    add_no_results_flag(p)
    return p.parse_args(argv)


class Side:
    def __init__(self, name: str, model: torch.nn.Module, compiled: bool):
        self.name = name
        self.optimizer = Lamb(parameter_groups(model, 0.01), lr=1e-3, compiled=compiled)
        self.params = [p for group in self.optimizer.param_groups for p in group["params"]]
        self.cpu_seconds, self.updates = 0.0, 0

    def run(self, grads: list[list[torch.Tensor]], first: int, count: int) -> None:
        start = time.process_time()
        for k in range(first, first + count):
            for p, g in zip(self.params, grads[k % len(grads)]):
                p.grad = g  # shared, read-only: the update does not write the gradient without loss scaling
            for group in self.optimizer.param_groups:
                group["lr"] = 1e-3 / (1 + k)
            self.optimizer.step()
        self.cpu_seconds += time.process_time() - start
        self.updates += count


def main(argv: list[str]) -> float:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = BertForPreTraining(named_config(args.model))
    sides = [Side("eager", model, compiled=False), Side("compiled", copy.deepcopy(model), compiled=True)]
    grads = [[torch.randn_like(p) * 1e-3 for p in sides[0].params] for _ in range(2)]
    parameters = sum(p.numel() for p in sides[0].params)
    started = time.perf_counter()
    sides[1].run(grads, 0, 1)  # compiles (one graph per parameter group)
    compile_s = time.perf_counter() - started
    sides[0].run(grads, 0, 1)
    for side in sides:
        side.cpu_seconds, side.updates = 0.0, 0
    step = 1
    for r in range(args.rounds):
        for side in sides if r % 2 == 0 else sides[::-1]:
            side.run(grads, step, args.updates)
        step += args.updates
        print(f"  round {r + 1}/{args.rounds}: " + ", ".join(
            f"{s.name} {s.cpu_seconds / s.updates * 1e3:.1f} ms" for s in sides), flush=True)
    with torch.no_grad():
        difference = max(float((a - b).abs().max()) for a, b in zip(sides[0].params, sides[1].params))
        scale = max(float(p.abs().max()) for p in sides[0].params)
    if difference > 1e-5 * scale:
        raise SystemExit(f"the compiled update drifted from the eager one by {difference:.3g}: the comparison is void")
    eager, compiled = (s.cpu_seconds / s.updates for s in sides)
    ratio = compiled / eager
    lines = [
        f"BERT-{args.model}: {parameters:,} parameters in {len(sides[0].params)} tensors, {args.threads} thread(s), "
        f"{args.rounds} rounds of {args.updates} updates per side",
        f"eager LAMB (foreach): {eager * 1e3:.3f} ms of CPU time per update",
        f"compiled LAMB: {compiled * 1e3:.3f} ms of CPU time per update (compiled in {compile_s:.1f} s)",
        f"largest weight difference after {sides[0].updates + 1} updates: {difference:.3g} (weights up to {scale:.3g})",
        f"traffic per parameter: eager {eager_lamb_bytes_per_parameter(False):.0f} bytes counted, compiled "
        f"{FUSED_LAMB_TENSORS * FP32_BYTES} bytes modelled (two fused passes)",
        f"compiled_over_eager_lamb={ratio:.3f}",
    ]
    print("\n".join(lines))
    if not args.no_results:
        from results_file import write_results  # beside this script

        write_results(RESULTS, lines, argv)
    return ratio


if __name__ == "__main__":
    main(sys.argv[1:])
