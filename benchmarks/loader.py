"""Sequences per second that one rank's training loader delivers, on MLPerf-length shards, for every
load-balance strategy (run.balance), in one run.

Gloo ranks (processes, one torch thread each; 8 by default, one DGX node, so that a presort group gathers and
deals 8 ranks' batches) run the harness's own TrainLoader, with the strategy's
presort exchange or packing agreement (bert.train.loader_balance), over variable-length shards of random
tokens whose lengths follow the mlperf-wiki mix at 512 tokens; each rank takes 56-sequence batches (h200_1x1's
micro-batch) as fast as the loader hands them over, with nothing else to do. Reading, shuffling, batching,
exchanging, collating and pinning all count: the CPU build of torch cannot pin memory, so each batch's tensors
are copied into new ones where the loader would pin them (the copy a pin makes; marked). Per strategy:

- sequences per CPU second of the rank's process (every thread: the reading thread, the finisher that
  exchanges, collates and pins, the training thread's share), i.e. what one core sustains, and per wall second;
- the training thread's own CPU time per batch: what the training step would wait for.

Each strategy's rate is also given as a ratio to `none` (no balancing: the plain loader), measured in the
same run. What the loader must keep up with is quoted, not measured here, and divides nothing: one H200 should
train about 1,000 sequences/s (the project's goal for one GPU). The last line is the slowest strategy's figure,
`loader_seq_per_s_per_rank=<x>` (goal: at least 3,000 sequences per CPU second).

    python -m benchmarks.loader                           # 8 shards of 4,096 samples, 150 batches a strategy
    python -m benchmarks.loader --batches 20 --samples 4096 --no-results   # a quick check

Results (with date, machine and torch version) go to benchmarks/loader_results.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

from benchmarks.common.data import write_mlperf_length_shards
from benchmarks.common.ranks import gather_from_ranks
from benchmarks.common.results_file import add_no_results_flag, print_and_record
from bert.data.balance import STRATEGIES
from bert.data.batch import Batch
from bert.data.loader import TrainLoader
from bert.distributed.launch import DistContext
from bert.system import Descriptor, load_descriptor
from bert.train import loader_balance

RESULTS = Path(__file__).with_name("loader_results.md")
GOAL, CONSUMER = 3000, 1000  # sequences/s: the goal; one H200's appetite, quoted (not measured)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=56, help="sequences per rank and batch")
    p.add_argument("--seq", type=int, default=512, help="the longest sequence")
    p.add_argument("--samples", type=int, default=32768, help="samples in the shards")
    p.add_argument("--shards", type=int, default=8)
    p.add_argument("--warmup", type=int, default=10, help="batches taken before the clock starts")
    p.add_argument("--batches", type=int, default=150, help="batches timed per strategy")
    p.add_argument("--ranks", type=int, default=8, help="gloo ranks, all on one node (the presort group)")
    add_no_results_flag(p)
    return p.parse_args(argv)


def bench_system(args: argparse.Namespace, strategy: str) -> Descriptor:
    return load_descriptor("h200_1x1").variant({
        "device": "cpu", "precision": "bf16", "processes_per_node": args.ranks,
        "global_batch_size": args.ranks * args.batch,
        "gradient_accumulation_steps": 1, "max_seq_length": args.seq, "max_predictions_per_seq": args.seq // 7,
        "balance": strategy, "performance": None, "init_checkpoint": None,
    }, description={"accelerators_per_node": str(args.ranks)})


def copy_instead_of_pinning() -> None:
    """Where torch cannot pin (a CPU build), a batch is copied as a pin would copy it."""
    if not torch.cuda.is_available():
        Batch.pin_memory = lambda self: self._map(lambda t: t.clone())


def time_strategy(args: argparse.Namespace, rank: int, paths: list[Path], strategy: str) -> list[float]:
    """[sequences, CPU s of the process, wall s, CPU s of this (the training) thread] over the timed batches."""
    system = bench_system(args, strategy)
    ctx = DistContext(rank, args.ranks, rank, args.ranks, torch.device("cpu"))
    loader = TrainLoader(paths, rank, args.ranks, 7, system.per_process_batch, ctx.device,
                         balance=loader_balance(system, ctx), pin=True)
    try:
        for _ in range(args.warmup):
            next(loader)
        dist.barrier()
        sequences = 0
        cpu, wall, thread = time.process_time(), time.perf_counter(), time.thread_time()
        for _ in range(args.batches):
            sequences += next(loader).num_samples
        return [sequences, time.process_time() - cpu, time.perf_counter() - wall, time.thread_time() - thread]
    finally:
        loader.close()


def rank_main(rank: int, world_size: int, args: argparse.Namespace, paths: list[Path], results: dict) -> None:
    copy_instead_of_pinning()
    for strategy in STRATEGIES:
        figures = torch.tensor(time_strategy(args, rank, paths, strategy), dtype=torch.float64)
        gathered = [torch.zeros_like(figures) for _ in range(world_size)]
        dist.all_gather(gathered, figures)
        if rank == 0:
            results[strategy] = [t.tolist() for t in gathered]


def report(args: argparse.Namespace, results: dict) -> tuple[list[str], float]:
    lines = [f"{args.ranks} gloo ranks of one node, one torch thread each; {args.batch} sequences per rank and batch, "
             f"lengths of the mlperf-wiki mix up to {args.seq}, varlen shards; {args.batches} batches timed per "
             f"strategy; pinning: "
             f"{'pinned' if torch.cuda.is_available() else 'a copy of each batch (the CPU build cannot pin)'}"]
    per_cpu = {strategy: min(seq / cpu for seq, cpu, _, _ in results[strategy])  # the slowest rank
               for strategy in STRATEGIES}
    for strategy in STRATEGIES:
        ranks = results[strategy]
        per_wall = min(seq / wall for seq, _, wall, _ in ranks)
        on_thread = max(thread / args.batches for _, _, _, thread in ranks)
        lines.append(f"  {strategy:<26} {per_cpu[strategy]:8.0f} sequences per CPU second per rank "
                     f"({per_cpu[strategy] / per_cpu['none']:.2f}x none; {per_wall:7.0f} per wall second on this "
                     f"shared machine); training thread {on_thread * 1e3:6.2f} ms CPU per batch")
    slowest = min(per_cpu.values())
    lines.append(f"slowest strategy: {slowest:.0f} sequences per CPU second per rank; goal {GOAL:,}: "
                 f"{'met' if slowest >= GOAL else 'NOT met'} (quoted, not measured here: one H200 should train about "
                 f"{CONSUMER:,} sequences/s, the project's goal for one GPU)")
    lines.append(f"loader_seq_per_s_per_rank={slowest:.0f}")
    return lines, slowest


def main(argv: list[str]) -> float:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="loader-bench-") as tmp:
        started = time.perf_counter()
        paths = write_mlperf_length_shards(Path(tmp), args.seq, args.samples, args.shards, form="varlen")
        print(f"wrote {args.samples} samples in {args.shards} varlen shards in {time.perf_counter() - started:.1f} s",
              flush=True)
        results = gather_from_ranks(rank_main, args.ranks, args, paths, timeout=timedelta(minutes=10))
    lines, slowest = report(args, results)
    print_and_record(RESULTS, lines, args, argv, ", gloo on one machine")
    return slowest


if __name__ == "__main__":
    main(sys.argv[1:])
