"""Static shapes for CUDA graphs: how many distinct token counts an epoch of MLPerf-length data
gives the unpadded encoder, and how many are left when run.token_sizes rounds each micro-batch's count up to
one of a few sizes, for the filler tokens that costs (bert.model.token_rounding, bert.simulate.static_shapes).

The peer is the unrounded layout (every token count its own shape); ours rounds to 8, 16, 32 and 64 sizes.
An epoch: --samples sequences (default about the MLPerf phase-2 training set: 4,320 shards of about 36,000)
in micro-batches of --batch (56: h200_1x1), drawn at random (run.balance "none") from the mlperf-wiki length
mix of bert.simulate.load_balance, or from the lengths of real shards (--lengths DIR). Training micro-batches
and eval batches (--eval-batch, 128) are rounded with sizes of their own: both add to the graphs a run
records. The last line is `distinct_shapes_per_epoch=<x>` for --sizes (16) sizes.

    python -m benchmarks.static_shapes [--samples N] [--batch 56] [--lengths DIR] [--no-results]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from benchmarks.common.results_file import add_no_results_flag, print_and_record
from bert.model.token_rounding import TokenSizes
from bert.simulate.load_balance import named_lengths, shard_lengths
from bert.simulate.static_shapes import epoch_shapes

RESULTS = Path(__file__).with_name("static_shapes_results.md")
MLPERF_EPOCH = 4320 * 36_000  # about: the phase-2 training set's 4,320 shards hold about 36,000 sequences each
COUNTS = (8, 16, 32, 64)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=int, default=MLPERF_EPOCH, help="sequences in the epoch")
    p.add_argument("--batch", type=int, default=56, help="sequences per training micro-batch")
    p.add_argument("--eval-batch", type=int, default=128, help="sequences per eval batch (run.eval.batch_size)")
    p.add_argument("--eval-samples", type=int, default=10_000, help="sequences in the eval set")
    p.add_argument("--max-len", type=int, default=512)
    p.add_argument("--lengths", type=Path, help="a directory of shards whose lengths to draw from "
                   "(default: the mlperf-wiki mix)")
    p.add_argument("--sizes", type=int, default=16, choices=COUNTS, help="the count of the last line")
    add_no_results_flag(p)
    return p.parse_args(argv)


def report(args: argparse.Namespace) -> tuple[list[str], int]:
    if args.lengths is not None:
        lengths, source = shard_lengths(args.lengths), f"the shards of {args.lengths}"
    else:
        lengths, source = named_lengths("mlperf-wiki", count=1_000_000, max_len=args.max_len), "mlperf-wiki lengths"
    started = time.perf_counter()
    rounding = [TokenSizes.spread(k, args.batch, args.max_len) for k in COUNTS]
    train = epoch_shapes(lengths, args.samples, args.batch, rounding)
    evals = epoch_shapes(lengths, args.eval_samples, args.eval_batch,
                         [TokenSizes.spread(k, args.eval_batch, args.max_len) for k in COUNTS])
    lines = [f"epoch of {args.samples:,} sequences in {train[0].micro_batches:,} micro-batches of {args.batch} "
             f"({source} up to {args.max_len}, mean {lengths.mean():.1f}); eval: {args.eval_samples:,} in batches "
             f"of {args.eval_batch}; {time.perf_counter() - started:.0f} s",
             f"  unrounded (peer): {train[0].distinct_tokens:,} distinct token counts in training, "
             f"{evals[0].distinct_tokens} in eval",
             "  sizes  step (tokens)  training shapes  filler tokens  eval shapes  eval fillers  shapes/unrounded"]
    for k, sizes, ours, ev in zip(COUNTS, rounding, train, evals):
        lines.append(f"  {k:>5}  {sizes.sizes[0]:>13,}  {ours.distinct_rounded:>15}  {ours.padding:>13.2%}  "
                     f"{ev.distinct_rounded:>11}  {ev.padding:>12.2%}  "
                     f"{ours.distinct_rounded / ours.distinct_tokens:>16.4f}")
    chosen = train[COUNTS.index(args.sizes)].distinct_rounded
    lines.append(f"distinct_shapes_per_epoch={chosen}")
    return lines, chosen


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    lines, chosen = report(args)
    print_and_record(RESULTS, lines, args, argv)
    return chosen


if __name__ == "__main__":
    main(sys.argv[1:])
