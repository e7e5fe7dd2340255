"""Load balance of each run.balance strategy: simulated at 1,024 and 4,096 ranks, the presort deals timed, and
the strategies measured on gloo ranks of this machine.

Simulated (bert.simulate.load_balance): 128 and 512 nodes x 8 ranks, 16 sequences per rank, lengths shaped like
MLPerf Wikipedia (mlperf-wiki). Per strategy with the trainer's defaults: the busiest rank's tokens over the
mean, the padding waste and the step time against perfect balance. Then the rungs from the seed paper's plan
to the default on stratified+local_presort: the seed paper's plan (4 bins, snake deal, no lookahead), quantile
bins, the balanced deal, lookahead (the default), and lookahead 2. Then two more ideas for nodes that balance
each other, tried here and not kept in the library (the results file says why): (A) each bin's draws dealt
across the nodes in complementary order, which moves samples between nodes and so only bounds what a plan from
lengths could do, and (B) a per-step exchange of the windows' lengths with the steering done per node (8 ranks'
windows pooled). The peer is the seed paper's plan, ours the default.

Deals: microseconds per deal of 8 ranks x 16 and x 64 sequences, snake against balanced, and the spread
(busiest rank's cost over the mean) each leaves.

Measured: 4 gloo ranks (2 nodes x 2; on 2 shared cores the step times carry a few percent of noise, the
computed tokens none) train a tiny BERT with the harness's own loader and TrainStep on shards
with the same length mix (scaled to --seq tokens); per strategy, the mean step time of the slowest rank
against `none`, and the tokens each rank computes per step (real tokens unpadded, batch x padded length
padded, rows x --seq packed and padded); the paper's plan against the default for the local presort.

    python -m benchmarks.load_balance                                     # all parts
    python -m benchmarks.load_balance --steps 5 --sim-steps 8 --no-results  # a quick check

Results (with date, machine, load average and torch version) go to benchmarks/load_balance_results.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

from benchmarks.common.data import write_mlperf_length_shards
from benchmarks.common.ranks import gather_from_ranks
from benchmarks.common.results_file import add_no_results_flag, write_results
from bert.cli.simulate import format_stats
from bert.data.balance import STRATEGIES, BalanceStrategy, balance_strategy
from bert.data.balance_plans import BERT_LARGE_ATTENTION_WIDTH, PAPER_BINS, bin_of, deal, sequence_cost
from bert.data.loader import TrainLoader
from bert.data.lookahead import SWAP_PASSES
from bert.data.stratified_sampler import StratifiedPlan, stratified_plan
from bert.distributed.launch import DistContext
from bert.mlperf_rules import REFERENCE_PREP
from bert.model.pretraining import BertForPreTraining
from bert.optim.factory import build_optimizer, build_schedule
from bert.simulate.load_balance import named_lengths, presorted, simulate_balance, stratified_draws
from bert.step import TrainStep
from bert.system import Descriptor, load_descriptor
from bert.train import loader_balance

RESULTS = Path(__file__).with_name("load_balance_results.md")
LOCAL = "stratified+local_presort"
PAPER = dict(bins=list(PAPER_BINS), deal_how="snake", lookahead=0)  # the seed paper's plan
RUNGS = [("the seed paper's plan (4 bins, snake, no lookahead): peer", PAPER),
         ("+ quantile bins (default)", dict(deal_how="snake", lookahead=0)),
         ("+ balanced deal (default)", dict(lookahead=0)),
         ("+ lookahead 1 (default): ours", {}),
         ("  lookahead 2", dict(lookahead=2))]
SCALES = (128, 512)
RANKS, RANKS_PER_NODE = 4, 2
# (label, strategy, unpadded encoder, run changes) measured on RANKS gloo ranks.
MEASURED = [("none (padded)", "none", False, {}), ("none (unpadded)", "none", True, {}),
            ("stratified", "stratified", True, {}),
            ("local presort, paper's plan (snake)", LOCAL, True,
             {"length_bins": list(PAPER_BINS), "presort_deal": "snake", "balance_lookahead": 0}),
            ("local presort, default but snake deal", LOCAL, True, {"presort_deal": "snake"}),
            ("local presort, default (balanced)", LOCAL, True, {}),
            ("global_presort", "global_presort", True, {}),
            ("packed (unpadded)", "packed", True, {}), ("packed (padded)", "packed", False, {})]


def complementary_bins(lengths: np.ndarray, plan: StratifiedPlan, steps: int, nodes: int, per_node: int,
                       rng: np.random.Generator) -> np.ndarray:
    """Idea A, unconstrained: each bin's draws of all ranks dealt across the nodes in snake order of length, so
    that every node gets a complementary mix. It moves samples between nodes; a plan that may only choose among
    each rank's own samples is bounded by it. [steps, nodes, per_node * batch]."""
    which = bin_of(lengths, plan.edges)
    parts = []
    for k, count in enumerate(plan.counts):
        drawn = rng.choice(lengths[which == k], size=(steps, nodes * per_node * count))
        for step in range(steps):
            drawn[step] = drawn[step][np.argsort(deal(drawn[step], nodes, "snake"), kind="stable")]
        parts.append(drawn.reshape(steps, nodes, per_node * count))
    return np.concatenate(parts, axis=2)


def node_steering(lengths: np.ndarray, plan: StratifiedPlan, steps: int, nodes: int, per_node: int,
                  rng: np.random.Generator) -> np.ndarray:
    """Idea B: the ranks of a node pool their windows (after a per-step exchange of lengths) and steer the
    node's batch toward per_node x the target, with per_node times the swaps; [steps, nodes, per_node * batch]."""
    pooled = StratifiedPlan(plan.edges, tuple(per_node * c for c in plan.counts), plan.bin_costs,
                            plan.attention_width, plan.lookahead)
    return stratified_draws(lengths, pooled, steps, nodes, rng, passes=per_node * SWAP_PASSES)


def _max_over_mean(drawn: np.ndarray) -> float:
    tokens = drawn.sum(-1)
    return float((tokens.max(-1) / tokens.mean(-1)).mean())


def experiments(lengths: np.ndarray, nodes: int, steps: int) -> list[str]:
    """Ideas A and B, each followed by the balanced intra-node deal, next to the kept lookahead."""
    plan = stratified_plan(lengths, None, 16, 512, BERT_LARGE_ATTENTION_WIDTH, 1)
    lines = []
    for label, pick in (("A: bins dealt across nodes (moves samples: a bound)", complementary_bins),
                        ("B: per-node steering after a length exchange (not kept)", node_steering)):
        per_node = pick(lengths, plan, steps, nodes, 8, np.random.default_rng(0))
        dealt = presorted(per_node.reshape(steps, nodes * 8, 16), 8, "balanced", BERT_LARGE_ATTENTION_WIDTH)
        lines.append(f"  {label:<58} max/mean {_max_over_mean(dealt):6.4f}")
    return lines


def _simulated_strategy(name: str) -> BalanceStrategy:
    """The strategy `name` for the simulated MLPerf lengths (sequences of up to 512 tokens)."""
    return balance_strategy(name, REFERENCE_PREP.max_seq_length)


def simulated(args: argparse.Namespace) -> list[str]:
    lengths = named_lengths("mlperf-wiki")
    lines = []
    for nodes in SCALES:
        lines.append(f"simulated: {nodes} x 8 ranks, 16 per rank (GBS {nodes * 128}), mlperf-wiki lengths "
                     f"(mean {lengths.mean():.1f}), {args.sim_steps} steps; defaults: quantile bins, balanced deal, "
                     "lookahead 1")
        for strategy in STRATEGIES:
            lines.append("  " + format_stats(simulate_balance(lengths, nodes, 8, 16, _simulated_strategy(strategy),
                                                              steps=args.sim_steps)))
        padded = simulate_balance(lengths, nodes, 8, 16, _simulated_strategy("none"), steps=args.sim_steps,
                                  unpadded=False)
        lines.append("  " + format_stats(padded, "none (padded encoder)"))
        lines.append(f"  rungs of {LOCAL}:")
        figures = []
        for label, changes in RUNGS:
            stats = simulate_balance(lengths, nodes, 8, 16, _simulated_strategy(LOCAL), steps=args.sim_steps, **changes)
            figures.append(stats.max_over_mean)
            lines.append("    " + format_stats(stats, label))
        lines.append(f"  nodes balancing each other, ideas tried ({LOCAL}, quantile bins, balanced deal; kept: "
                     f"lookahead, {figures[3]:.4f} above):")
        lines.extend("  " + line for line in experiments(lengths, nodes, args.sim_steps))
        lines.append(f"  peer (paper's plan) {figures[0]:.4f}, ours (default) {figures[3]:.4f}, ratio "
                     f"{figures[3] / figures[0]:.3f}; default <= 1.02: {'met' if figures[3] <= 1.02 else 'NOT met'}, "
                     f"aim <= 1.01: {'met' if figures[3] <= 1.01 else 'NOT met'}")
    return lines + WHY_NOT


# Why ideas A and B are not in the library (the figures above are the simulator's).
WHY_NOT = [
    "why lookahead is kept and A and B are not:",
    "  kept, lookahead: rank-local, no collective, nothing waits; each rank steers toward one target computed from the",
    "    first shard, every sample still seen once (pinned after 4 passes), the batch and its bin counts unchanged.",
    "  A moves samples between nodes, which the aim rules out; it bounds what a plan from lengths could reach. A plan",
    "    from a lengths index that only picks among each rank's own samples knows what B learns by exchange, so it",
    "    reaches B's figure at best, at the price of every rank reading the lengths of every shard and replaying",
    "    every rank's sampler.",
    "  B gains about 0.3 % over lookahead here, but a node can choose only after a collective of all ranks, its",
    "    chosen samples then need a second, variable-size exchange, and the loader must wait for both before it forms",
    "    the next window: two steps of pipeline and a global collective per step for 0.3 %. Left for a later rung.",
]


def deal_timing(repeats: int = 300) -> list[str]:
    """Microseconds per deal and the spread it leaves, for a node of 8 ranks."""
    lengths = named_lengths("mlperf-wiki")
    rng = np.random.default_rng(0)
    lines = [f"deals: a node of 8 ranks, mlperf-wiki lengths, cost = tokens + attention term, {repeats} deals each"]
    for per_rank in (16, 64):
        groups = [sequence_cost(rng.choice(lengths, 8 * per_rank), BERT_LARGE_ATTENTION_WIDTH) for _ in range(repeats)]
        figures = {}
        for how in ("snake", "balanced"):
            start = time.perf_counter()
            seats = [deal(costs, 8, how) for costs in groups]
            micros = (time.perf_counter() - start) / repeats * 1e6
            spread = np.mean([np.bincount(s, c).max() / c.sum() * 8 for s, c in zip(seats, groups)])
            figures[how] = (micros, spread)
            lines.append(f"  8 x {per_rank:<3} {how:<9} {micros:7.0f} us/deal  busiest rank's cost / mean {spread:.5f}")
        lines.append(f"  8 x {per_rank:<3} balanced / snake: time x{figures['balanced'][0] / figures['snake'][0]:.1f}, "
                     f"excess spread x{(figures['balanced'][1] - 1) / (figures['snake'][1] - 1):.3f}")
    return lines


def bench_system(args: argparse.Namespace, strategy: str, unpadded: bool, changes: dict) -> Descriptor:
    return load_descriptor("cpu_tiny").variant({
        "processes_per_node": RANKS_PER_NODE, "global_batch_size": RANKS * args.batch, "max_seq_length": args.seq,
        "max_predictions_per_seq": args.seq // 7, "balance": strategy, "unpadded": unpadded, **changes,
    }, description={"number_of_nodes": str(RANKS // RANKS_PER_NODE)})


class Counting:
    """Passes batches through, adding up the tokens the encoder computes."""

    def __init__(self, loader: TrainLoader, unpadded: bool):
        self.loader, self.unpadded, self.computed = loader, unpadded, 0

    def __next__(self):
        batch = next(self.loader)
        self.computed += batch.num_tokens if self.unpadded else batch.input_ids.numel()
        return batch


def time_strategy(args, rank: int, paths: list[Path], system: Descriptor) -> tuple[float, float, float]:
    """(seconds per step of the slowest rank, computed tokens per rank and step: mean, max)."""
    ctx = DistContext(rank, RANKS, rank % RANKS_PER_NODE, RANKS_PER_NODE, torch.device("cpu"))
    torch.manual_seed(0)
    model = BertForPreTraining(system.model_config())
    step = TrainStep(system.run, ctx, model, build_optimizer(model, system.run.optimizer),
                     build_schedule(system.run.optimizer))
    loader = TrainLoader(paths, rank, RANKS, 7, system.per_process_batch, ctx.device,
                         balance=loader_balance(system, ctx))
    batches = Counting(loader, step.unpadded)
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
    return seconds / RANKS, total / RANKS, most


def rank_main(rank: int, world_size: int, args: argparse.Namespace, paths: list[Path], results: dict) -> None:
    for repeat in range(args.repeats):  # interleaved, the fastest kept: the cores are shared and noisy
        for label, strategy, unpadded, changes in MEASURED:
            figures = time_strategy(args, rank, paths, bench_system(args, strategy, unpadded, changes))
            if rank == 0:
                results[label] = min(results.get(label, figures), figures)
                print(f"  {label} (pass {repeat + 1}): {figures[0]:.3f} s/step", flush=True)


def measured(args: argparse.Namespace) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_mlperf_length_shards(Path(tmp), args.seq, 16384, 8)  # 2,048 a shard: the first sets the bins
        results = gather_from_ranks(rank_main, RANKS, args, paths, timeout=timedelta(minutes=30))
    base = results["none (unpadded)"][0]
    lines = [f"measured: {RANKS} gloo ranks ({RANKS // RANKS_PER_NODE} nodes x {RANKS_PER_NODE}) on this machine's "
             f"cores, tiny BERT, {args.batch} per rank, mlperf-wiki lengths scaled to {args.seq}, {args.steps} steps "
             f"after {args.warmup}, fastest of {args.repeats} interleaved passes"]
    for label, *_ in MEASURED:
        seconds, mean_tokens, max_tokens = results[label]
        lines.append(f"  {label:<38} {seconds:.3f} s/step x{seconds / base:.3f} of none (unpadded)  computed "
                     f"tokens/rank {mean_tokens:7.0f} (busiest {max_tokens:7.0f}, x{max_tokens / mean_tokens:.3f})")
    ours = results["local presort, default (balanced)"]
    for peer in ("local presort, paper's plan (snake)", "local presort, default but snake deal"):
        theirs = results[peer]
        lines.append(f"measured: peer ({peer}) {theirs[0]:.3f} s/step, busiest x{theirs[2] / theirs[1]:.3f}; ours "
                     f"(default, balanced) {ours[0]:.3f} s/step, busiest x{ours[2] / ours[1]:.3f}; step time ratio "
                     f"{ours[0] / theirs[0]:.3f}")
    return lines


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sim-steps", type=int, default=32, help="simulated steps per strategy")
    parser.add_argument("--batch", type=int, default=16, help="sequences per rank (measured part)")
    parser.add_argument("--seq", type=int, default=128, help="longest sequence (measured part)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=2, help="passes over the measured strategies (fastest kept)")
    parser.add_argument("--skip-measured", action="store_true", help="only the simulation and the deal timing")
    add_no_results_flag(parser)
    args = parser.parse_args(argv)
    lines = simulated(args)
    print("\n".join(lines), flush=True)
    lines += deal_timing()
    print("\n".join(lines[-7:]), flush=True)
    if not args.skip_measured:
        lines += measured(args)
        print("\n".join(lines[-len(MEASURED) - 3:]), flush=True)
    if not args.no_results:
        write_results(RESULTS, lines, argv, ", gloo on one machine")


if __name__ == "__main__":
    main(sys.argv[1:])
