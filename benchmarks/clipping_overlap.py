"""Step time of every clipping mode (run.clip) on gloo ranks of one machine, in one run.

The peer is NVIDIA's, `after_allreduce` (dgxa100_1x8's run.clip): the update waits for every bucket's allreduce and
then for a global norm. Ours is the seed paper's, `bucketwise_before_allreduce` (dgxa100_128x8_adam's): each DDP
bucket is clipped and its allreduce starts while the backward pass goes on. Every rank runs the harness's own
TrainStep on a BERT big enough that the gradient allreduce takes a real share of the step (BERT-base by default),
with random full-length sequences. Modes alternate over rounds, and each mode's time is the median of its rounds'
mean step times (the slowest rank's). The last line is the ratio at the largest world size:
`bucketwise_over_after_allreduce=<x>` (below 1: the overlap pays).

    python -m benchmarks.clipping_overlap                       # 2 and 4 ranks, BERT-base (long on 2 cores)
    python -m benchmarks.clipping_overlap --world-sizes 2 --layers 2 --steps 2 --rounds 1   # a quick check

Results (with date, machine and torch version) go to benchmarks/clipping_overlap_results.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

from benchmarks.common.ranks import gather_from_ranks
from benchmarks.common.results_file import add_no_results_flag, write_results
from bert.data.batch import Batch, collate
from bert.data.random_samples import random_samples
from bert.distributed.clip_kinds import CLIP_KINDS
from bert.distributed.launch import DistContext
from bert.model.pretraining import BertForPreTraining
from bert.optim.factory import build_optimizer, build_schedule
from bert.step import TrainStep
from bert.system import Descriptor, load_descriptor

RESULTS = Path(__file__).with_name("clipping_overlap_results.md")


def bench_system(args: argparse.Namespace, world_size: int, mode: str) -> Descriptor:
    base = load_descriptor("cpu_tiny")
    layers = {"num_layers": args.layers} if args.layers else {}
    return base.variant({
        "model": args.model, "model_overrides": {"gelu": base.model_config().gelu, **layers},
        "processes_per_node": world_size, "global_batch_size": args.batch * world_size,
        "gradient_accumulation_steps": 1, "max_seq_length": args.seq, "max_predictions_per_seq": args.seq // 7,
        "clip": mode, "bucket_cap_mb": args.bucket_cap_mb,
    })


def random_batch(system: Descriptor, seed: int) -> Batch:
    """Full-length random sequences, so that every rank does the same work."""
    run = system.run
    return collate(random_samples([run.max_seq_length] * system.per_process_batch, system.model_config().vocab_size,
                                  run.max_predictions_per_seq, seed=seed))


def time_mode(args: argparse.Namespace, rank: int, world_size: int, mode: str) -> float:
    """Mean seconds per step of the slowest rank, after warm-up steps (which include DDP's bucket rebuild)."""
    system = bench_system(args, world_size, mode)
    ctx = DistContext(rank, world_size, rank, world_size, torch.device("cpu"))
    torch.manual_seed(0)
    model = BertForPreTraining(system.model_config())
    step = TrainStep(system.run, ctx, model, build_optimizer(model, system.run.optimizer),
                     build_schedule(system.run.optimizer))
    batch = random_batch(system, rank)
    batches = iter(lambda: batch, None)
    for s in range(args.warmup):
        step(batches, s)
    dist.barrier()
    start = time.perf_counter()
    for s in range(args.steps):
        step(batches, args.warmup + s)
    elapsed = torch.tensor((time.perf_counter() - start) / args.steps)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    return float(elapsed)


def rank_main(rank: int, world_size: int, args: argparse.Namespace, results: dict) -> None:
    times: dict[str, list[float]] = {mode: [] for mode in CLIP_KINDS}
    for r in range(args.rounds):
        for mode in CLIP_KINDS if r % 2 == 0 else reversed(CLIP_KINDS):
            times[mode].append(time_mode(args, rank, world_size, mode))
            if rank == 0:
                print(f"  world {world_size} round {r + 1}/{args.rounds} {mode}: {times[mode][-1]:.3f} s/step",
                      flush=True)
    if rank == 0:
        results.update({mode: statistics.median(t) for mode, t in times.items()})


def measure(args: argparse.Namespace, world_size: int) -> dict[str, float]:
    return gather_from_ranks(rank_main, world_size, args, timeout=timedelta(minutes=30),
                             threads=max(1, (os.cpu_count() or 1) // world_size))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world-sizes", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--model", default="base", help="named model config (bert.model.config)")
    parser.add_argument("--layers", type=int, default=None, help="override the number of encoder layers")
    parser.add_argument("--batch", type=int, default=4, help="sequences per rank and step")
    parser.add_argument("--seq", type=int, default=128, help="sequence length")
    parser.add_argument("--bucket-cap-mb", type=float, default=25.0)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    add_no_results_flag(parser)
    args = parser.parse_args(argv)
    # Ours: the seed paper's mode, as its descriptor clips; the peer's: NVIDIA's, as theirs clips.
    ours, peer = load_descriptor("dgxa100_128x8_adam").run.clip, load_descriptor("dgxa100_1x8").run.clip
    lines = []
    for world_size in sorted(args.world_sizes):
        times = measure(args, world_size)
        ratio = times[ours] / times[peer]
        lines += [f"world {world_size}: " + ", ".join(f"{m} {times[m]:.3f} s/step" for m in CLIP_KINDS),
                  f"world {world_size}: peer ({peer}) {times[peer]:.3f} s/step, ours ({ours}) {times[ours]:.3f} "
                  f"s/step, ratio {ratio:.3f}"]
        print("\n".join(lines[-2:]), flush=True)
    lines.append(f"bucketwise_over_after_allreduce={ratio:.3f}")  # the results' name of ours over the peer's
    print(lines[-1])
    if not args.no_results:
        write_results(RESULTS, lines, argv, ', gloo on one machine')


if __name__ == "__main__":
    main(sys.argv[1:])
