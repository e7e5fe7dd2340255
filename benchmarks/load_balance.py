"""Load balance of each run.balance strategy: simulated at 1,024 ranks, and measured on 2 gloo ranks.

Simulated (bert.simulate.load_balance): 128 nodes x 8 ranks, 16 sequences per rank (GBS 16,384), lengths shaped
like MLPerf Wikipedia (mlperf-wiki). Per strategy: the busiest rank's tokens over the mean, the padding
waste and the step time against perfect balance; then the paper's strategy with 4, 8 and 16 length bins.
The peer is random sampling (`none`), ours `stratified+local_presort`; the goal is max/mean <= 1.05.

Measured: 2 gloo ranks of this machine train a tiny BERT with the harness's own loader and TrainStep on
shards with the same length mix (scaled to --seq tokens); per strategy, the mean step time of the slowest
rank against `none`, and the tokens each rank computes per step (real tokens unpadded, batch x padded length
padded, rows x --seq packed and padded).

    python benchmarks/load_balance.py                         # both parts
    python benchmarks/load_balance.py --steps 5 --sim-steps 8 # a quick check

Results (with date, machine, load average and torch version) go to benchmarks/load_balance_results.md.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from results_file import add_no_results_flag, write_results

from bert.cli.simulate import format_stats
from bert.data.balance_plans import STRATEGIES, equal_bins
from bert.data.loader import TrainLoader
from bert.data.shards import Samples, write_shard
from bert.distributed.launch import DistContext
from bert.model import BertForPreTraining
from bert.optim.factory import build_optimizer, build_schedule
from bert.simulate.load_balance import named_lengths, simulate_balance
from bert.step import TrainStep
from bert.system import System, load_system
from bert.train import loader_balance

REPO = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).with_name("load_balance_results.md")
PEER, OURS = "none", "stratified+local_presort"
# (strategy, unpadded encoder) pairs measured on 2 ranks.
MEASURED = [("none", False), ("none", True), ("stratified", True), ("stratified+local_presort", True),
            ("global_presort", True), ("packed", True), ("packed", False)]


def simulated(args: argparse.Namespace) -> list[str]:
    lengths = named_lengths("mlperf-wiki")
    lines = [f"simulated: 128 x 8 ranks, 16 per rank (GBS 16384), mlperf-wiki lengths (mean {lengths.mean():.1f}), "
             f"{args.sim_steps} steps"]
    results = {}
    for strategy in STRATEGIES:
        results[strategy] = simulate_balance(lengths, 128, 8, 16, strategy, steps=args.sim_steps)
        lines.append("  " + format_stats(results[strategy]))
    padded = simulate_balance(lengths, 128, 8, 16, "none", steps=args.sim_steps, unpadded=False)
    lines.append("  " + format_stats(padded, "none (padded encoder)"))
    for count in (4, 8, 16):
        for strategy in ("stratified", OURS):
            stats = simulate_balance(lengths, 128, 8, 16, strategy, steps=args.sim_steps, bins=equal_bins(count))
            label = f"{strategy}, {count} bins ({len(stats.bin_counts)} used)"
            lines.append("  " + format_stats(stats, label))
    peer, ours = results[PEER].max_over_mean, results[OURS].max_over_mean
    lines.append(f"simulated max/mean: peer ({PEER}) {peer:.3f}, ours ({OURS}) {ours:.3f}, ratio {ours / peer:.3f}; "
                 f"goal <= 1.05: {'met' if ours <= 1.05 else 'NOT met'} (bins too rare for one draw per batch are "
                 "merged; whole-number counts shift the mix a little: tokens/rank)")
    return lines


def write_dataset(folder: Path, seq: int, samples: int, shards: int, seed: int = 0) -> list[Path]:
    """Random tokens with mlperf-wiki lengths scaled to `seq`; 15% of each sample masked."""
    rng = np.random.default_rng(seed)
    lengths = np.maximum(named_lengths("mlperf-wiki", samples, seed, max_len=seq), 8)
    width = seq // 7
    paths = []
    for k, part in enumerate(np.array_split(np.arange(samples), shards)):
        n = lengths[part]
        positions = np.zeros((len(part), width), np.int32)
        for i, length in enumerate(n):
            chosen = np.sort(rng.choice(np.arange(1, length), max(1, min(width, length * 15 // 100)), replace=False))
            positions[i, :len(chosen)] = chosen
        segments = np.concatenate([(np.arange(m) >= m // 2) for m in n]).astype(np.int8)
        shard = Samples(rng.integers(5, 4096, n.sum()).astype(np.int32), segments,
                        np.concatenate([[0], np.cumsum(n)]).astype(np.int64), positions,
                        np.where(positions > 0, rng.integers(5, 4096, positions.shape), 0).astype(np.int32),
                        rng.integers(0, 2, len(part)).astype(np.int8))
        paths.append(folder / f"part-{k:05d}.hdf5")
        write_shard(paths[-1], shard, "fixed", seq, width)
    return paths


def bench_system(args: argparse.Namespace, strategy: str, unpadded: bool) -> System:
    return load_system("cpu_tiny").variant({
        "processes_per_node": 2, "global_batch_size": 2 * args.batch, "max_seq_length": args.seq,
        "max_predictions_per_seq": args.seq // 7, "balance": strategy, "unpadded": unpadded,
    })


class Counting:
    """Passes batches through, adding up the tokens the encoder computes."""

    def __init__(self, loader: TrainLoader, padded: bool):
        self.loader, self.padded, self.computed = loader, padded, 0

    def __next__(self):
        batch = next(self.loader)
        self.computed += batch.input_ids.numel() if self.padded else batch.num_tokens
        return batch


def time_strategy(args, rank: int, paths: list[Path], strategy: str, unpadded: bool) -> tuple[float, float, float]:
    """(seconds per step of the slowest rank, computed tokens per rank and step: mean, max)."""
    system = bench_system(args, strategy, unpadded)
    ctx = DistContext(rank, 2, rank, 2, torch.device("cpu"))
    torch.manual_seed(0)
    model = BertForPreTraining(system.model_config())
    step = TrainStep(system, ctx, model, build_optimizer(model, system.run.optimizer),
                     build_schedule(system.run.optimizer))
    loader = TrainLoader(paths, rank, 2, 7, system.per_process_batch, ctx.device, balance=loader_balance(system, ctx))
    batches = Counting(loader, step.padded)
    try:
        for s in range(args.warmup):
            step(batches, s)
        batches.computed = 0
        dist.barrier()
        start = time.perf_counter()
        for s in range(args.steps):
            step(batches, args.warmup + s)
        figures = torch.tensor([time.perf_counter() - start, batches.computed, batches.computed], dtype=torch.float64)
        dist.all_reduce(figures[:2], op=dist.ReduceOp.SUM)
        dist.all_reduce(figures[2:], op=dist.ReduceOp.MAX)
    finally:
        loader.close()
    seconds, total, most = (float(x) / args.steps for x in figures)
    return seconds / 2, total / 2, most


def rank_main(rank: int, args: argparse.Namespace, port: int, paths: list[Path], results: dict) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2, timeout=timedelta(minutes=30))
    for strategy, unpadded in MEASURED:
        figures = time_strategy(args, rank, paths, strategy, unpadded)
        if rank == 0:
            results[f"{strategy}|{unpadded}"] = figures
            print(f"  {strategy} ({'unpadded' if unpadded else 'padded'}): {figures[0]:.3f} s/step", flush=True)
    dist.destroy_process_group()


def measured(args: argparse.Namespace) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp, mp.Manager() as manager:
        paths = write_dataset(Path(tmp), args.seq, 4096, 4)
        results = manager.dict()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        mp.spawn(rank_main, args=(args, port, paths, results), nprocs=2)
        results = dict(results)
    base = results["none|True"][0]
    lines = [f"measured: 2 gloo ranks, tiny BERT, {args.batch} per rank, mlperf-wiki lengths scaled to {args.seq}, "
             f"{args.steps} steps after {args.warmup}"]
    for strategy, unpadded in MEASURED:
        seconds, mean_tokens, max_tokens = results[f"{strategy}|{unpadded}"]
        lines.append(f"  {strategy + (' (unpadded)' if unpadded else ' (padded)'):<36} {seconds:.3f} s/step "
                     f"x{seconds / base:.3f} of none (unpadded)  computed tokens/rank {mean_tokens:7.0f} "
                     f"(busiest {max_tokens:7.0f})")
    ours = results[f"{OURS}|True"][0]
    lines.append(f"measured step time: peer ({PEER}, unpadded) {base:.3f} s, ours ({OURS}) {ours:.3f} s, "
                 f"ratio {ours / base:.3f}")
    return lines


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sim-steps", type=int, default=64, help="simulated steps per strategy")
    parser.add_argument("--batch", type=int, default=16, help="sequences per rank (measured part)")
    parser.add_argument("--seq", type=int, default=128, help="longest sequence (measured part)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--skip-measured", action="store_true", help="only the simulation")
    add_no_results_flag(parser)
    args = parser.parse_args(argv)
    lines = simulated(args)
    print("\n".join(lines), flush=True)
    if not args.skip_measured:
        lines += measured(args)
        print("\n".join(lines[-len(MEASURED) - 2:]), flush=True)
    if not args.no_results:
        write_results(RESULTS, lines, argv, ", gloo on one machine")


if __name__ == "__main__":
    main(sys.argv[1:])
