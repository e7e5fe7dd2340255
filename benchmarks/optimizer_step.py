"""CPU time of one LAMB update: the eager foreach update against the same update compiled, in one process.

The peer is bert.optim.lamb's eager update (foreach kernels, about 13 passes over memory, what runs without
apex); ours is the same function through torch.compile (run.optimizer.implementation "compiled"). Both step
identical copies of a BERT's parameters, alternating over rounds after a warm-up that compiles, and the final
weights are held to each other (benchmarks.common.lamb_pair, with the acceptance check's drift rule). The
traffic lines are bert.optim.traffic's: the eager update's bytes per parameter counted, the fused model's for
the compiled one (what `mlperf-bert simulate` uses).
The last line is `compiled_over_eager_lamb=<compiled CPU s per update / eager>` (goal: below 1).

    python -m benchmarks.optimizer_step                       # BERT-base, 4 rounds of 5 updates
    python -m benchmarks.optimizer_step --model tiny --rounds 2 --updates 2 --no-results   # a quick check

Results (with date, machine and torch version) go to benchmarks/optimizer_step_results.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from benchmarks.common.lamb_pair import DRIFT_TOLERANCE, LambPair
from benchmarks.common.results_file import add_no_results_flag, print_and_record
from bert.model.config import named_config
from bert.model.pretraining import BertForPreTraining
from bert.model.size import FP32_BYTES
from bert.optim.traffic import FUSED_LAMB_TENSORS, eager_lamb_bytes_per_parameter

RESULTS = Path(__file__).with_name("optimizer_step_results.md")
CPU = torch.device("cpu")


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="base", help="a named model config (its parameters are what is updated)")
    p.add_argument("--updates", type=int, default=5, help="timed updates per side per round")
    p.add_argument("--rounds", type=int, default=4, help="alternations")
    p.add_argument("--threads", type=int, default=1, help="CPU threads")
    add_no_results_flag(p)
    return p.parse_args(argv)


def main(argv: list[str]) -> float:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    pair = LambPair(BertForPreTraining(named_config(args.model)))
    pair.warm_up(CPU)
    for r in range(args.rounds):
        pair.round(r, args.updates, CPU)
        print(f"  round {r + 1}/{args.rounds}: " + ", ".join(
            f"{s.name} {s.seconds_per_update('cpu') * 1e3:.1f} ms" for s in pair.sides), flush=True)
    difference, scale = pair.drift()
    if not pair.agree():
        raise SystemExit(f"the compiled update drifted from the eager one by {difference:.3g} (more than "
                         f"{DRIFT_TOLERANCE:g} of the largest weight, {scale:.3g}): the comparison is void")
    eager, compiled = (s.seconds_per_update("cpu") for s in pair.sides)
    ratio = pair.ratio("cpu")
    lines = [
        f"BERT-{args.model}: {pair.parameters:,} parameters in {len(pair.eager.params)} tensors, {args.threads} "
        f"thread(s), {args.rounds} rounds of {args.updates} updates per side",
        f"eager LAMB (foreach): {eager * 1e3:.3f} ms of CPU time per update",
        f"compiled LAMB: {compiled * 1e3:.3f} ms of CPU time per update (compiled in {pair.compile_seconds:.1f} s)",
        f"largest weight difference after {pair.eager.updates + 1} updates: {difference:.3g} (weights up to "
        f"{scale:.3g})",
        f"traffic per parameter: eager {eager_lamb_bytes_per_parameter(False):.0f} bytes counted, compiled "
        f"{FUSED_LAMB_TENSORS * FP32_BYTES} bytes modelled (two fused passes)",
        f"compiled_over_eager_lamb={ratio:.3f}",
    ]
    print_and_record(RESULTS, lines, args, argv)
    return ratio


if __name__ == "__main__":
    main(sys.argv[1:])
