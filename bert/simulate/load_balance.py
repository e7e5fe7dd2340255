"""The load-balance simulator: how evenly each strategy spreads a step's work over the ranks.

`simulate_balance(lengths, nodes, ranks_per_node, per_rank_batch, strategy, ...)`, for a strategy parsed where it
is read (bert.data.balance.BalanceStrategy: a descriptor's, or the command's --strategy), returns `BalanceStats`:
the busiest rank's computed tokens over the mean, the padding's share, the step time over perfect balance (under
the cost model), the tokens per rank, and the bin counts or sequences per row where the strategy has them. It runs
the plans of the training data path (bert.data.balance_plans, bert.data.lookahead, bert.data.row_packing) with the
trainer's defaults (bert.data.balance.BalanceSpec), on lengths from `named_lengths` or `shard_lengths`. The cost
model and what is drawn: docs/simulate.md, "The load-balance model".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bert.data.balance import BalanceSpec, BalanceStrategy
from bert.data.balance_plans import BERT_LARGE_ATTENTION_WIDTH, bin_of, deal, sequence_cost
from bert.data.lookahead import SWAP_PASSES, steer
from bert.data.row_packing import WINDOW_BATCHES, agree, capacities, first_fit, leftover_order, taken, window_order
from bert.data.shards import read_shard, row_blocks, shard_header
from bert.data.stratified_sampler import StratifiedPlan, stratified_plan

NAMED_DISTRIBUTIONS = ("mlperf-wiki",)


@dataclass(frozen=True)
class BalanceStats:
    strategy: str
    max_over_mean: float  # computed tokens of the busiest rank / the mean over ranks, averaged over steps
    padding_waste: float  # share of computed tokens that are padding
    step_time_ratio: float  # expected step time / perfect balance, under the cost model
    tokens_per_rank: float  # computed tokens per rank and step, on average
    bin_counts: tuple[int, ...] | None = None  # per-rank draws from each bin in use (stratified strategies)
    sequences_per_row: float | None = None  # packed: sequences per packed row, on average


def named_lengths(name: str, count: int = 200_000, seed: int = 0, max_len: int = 512) -> np.ndarray:
    """A synthetic length distribution. "mlperf-wiki" follows the shape of MLPerf's Wikipedia phase-2 data:
    the paper's 6/3/2/5 bin mix for 16, with most long samples filled to the full length, so that packing
    puts about 2 sequences in a 512-token row."""
    if name not in NAMED_DISTRIBUTIONS:
        raise ValueError(f"unknown length distribution {name!r}; named ones: {', '.join(NAMED_DISTRIBUTIONS)} "
                         "(or give a directory of shards)")
    rng = np.random.default_rng(seed)
    scale = max_len / 512
    edges = np.array([0, 128, 256, 384, 512]) * scale
    bins = rng.choice(4, size=count, p=[6 / 16, 3 / 16, 2 / 16, 5 / 16])
    low, high = np.maximum(edges[bins], 16 * scale) + 1, edges[bins + 1] + 1
    lengths = rng.integers(low.astype(np.int64), high.astype(np.int64))
    full = (bins == 3) & (rng.random(count) < 0.6)  # documents long enough fill the whole sequence
    lengths[full] = max_len
    return lengths.astype(np.int64)


def shard_lengths(directory: Path, limit: int = 1_000_000, glob: str = "**/*.hdf5") -> np.ndarray:
    """The lengths (real tokens) of the samples in a directory's shards, up to `limit`, a block at a time."""
    paths = sorted(Path(directory).glob(glob))
    if not paths:
        raise FileNotFoundError(f"{directory}: no shards match {glob!r}")
    found: list[np.ndarray] = []
    total = 0
    for path in paths:
        for rows in row_blocks(shard_header(path).samples, 16384):
            found.append(read_shard(path, rows).lengths)
            total += len(found[-1])
            if total >= limit:
                return np.concatenate(found)[:limit]
    return np.concatenate(found)


def stratified_draws(lengths: np.ndarray, plan: StratifiedPlan, steps: int, ranks: int, rng: np.random.Generator,
                     passes: int = SWAP_PASSES) -> np.ndarray:
    """[steps, ranks, batch] lengths drawn as the stratified sampler draws them: per bin, the oldest counts[k]
    of a window of (1 + lookahead) x counts[k], steered toward the plan's target (bert.data.lookahead)."""
    which = bin_of(lengths, plan.edges)
    by_bin = [lengths[which == k] for k in range(len(plan.counts))]
    if plan.lookahead == 0:
        parts = [rng.choice(b, size=(steps, ranks, c)) for b, c in zip(by_bin, plan.counts)]
        return np.concatenate(parts, axis=2)
    waiting = [rng.choice(b, size=(ranks, c * plan.lookahead)) for b, c in zip(by_bin, plan.counts)]
    waited = [np.zeros(w.shape, np.int64) for w in waiting]
    drawn = np.empty((steps, ranks, sum(plan.counts)), dtype=np.int64)
    for step in range(steps):
        windows = [np.concatenate([w, rng.choice(b, size=(ranks, c))], axis=1)
                   for w, b, c in zip(waiting, by_bin, plan.counts)]
        ages = [np.pad(w, ((0, 0), (0, c))) for w, c in zip(waited, plan.counts)]
        window, age = np.concatenate(windows, axis=1), np.concatenate(ages, axis=1)
        took = steer(sequence_cost(window, plan.attention_width), age, plan.window, plan.target, passes)
        drawn[step] = window[took].reshape(ranks, -1)
        columns = np.cumsum([0, *(w.shape[1] for w in windows)])
        for k, (low, high) in enumerate(zip(columns[:-1], columns[1:])):
            left = ~took[:, low:high]
            waiting[k] = window[:, low:high][left].reshape(ranks, -1)
            waited[k] = age[:, low:high][left].reshape(ranks, -1) + 1
    return drawn


def _packed(lengths: np.ndarray, steps: int, ranks: int, batch: int, row_len: int, rng: np.random.Generator
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Packing by rows on all ranks (bert.data.row_packing): [steps, ranks] computed tokens, real tokens,
    attention area, and sequences taken."""
    size = WINDOW_BATCHES * batch
    pool, waited = rng.choice(lengths, size=(ranks, size)), np.zeros((ranks, size), np.int64)
    out = np.empty((4, steps, ranks), dtype=np.float64)
    for step in range(steps):
        order = window_order(waited)
        window = np.take_along_axis(pool, order, axis=1)
        rows = first_fit(window, row_len)
        count_rows, counts = agree(capacities(rows, batch), ranks * batch)
        took = taken(rows, count_rows, counts)
        out[0, step] = count_rows * row_len
        out[1:, step] = (window * took).sum(1), (window.astype(np.float64) ** 2 * took).sum(1), counts
        in_stream = np.zeros_like(took)
        np.put_along_axis(in_stream, order, took, axis=1)
        keep = leftover_order(in_stream)
        pool, waited = np.take_along_axis(pool, keep, axis=1), np.take_along_axis(waited, keep, axis=1) + 1
        fresh = np.arange(size)[None, :] >= (size - counts)[:, None]
        pool[fresh], waited[fresh] = rng.choice(lengths, size=int(fresh.sum())), 0
    return out[0], out[1], out[2], out[3]


def presorted(drawn: np.ndarray, groups: int, how: str, attention_width: int) -> np.ndarray:
    """[steps, G*k, batch] -> the same sequences, gathered by `groups` consecutive ranks and dealt out."""
    steps, ranks, batch = drawn.shape
    gathered = drawn.reshape(steps * (ranks // groups), groups * batch)
    dealt = np.empty_like(gathered)
    for index, lengths in enumerate(gathered):
        receiver = deal(sequence_cost(lengths, attention_width), groups, how)
        dealt[index] = lengths[np.argsort(receiver, kind="stable")]
    return dealt.reshape(steps, ranks, batch)


def _padded(drawn: np.ndarray, pad_multiple: int) -> tuple[np.ndarray, np.ndarray]:
    """(computed tokens, attention area) of every [step, rank] when each batch is padded to its longest."""
    padded = -(-drawn.max(-1) // pad_multiple) * pad_multiple
    return drawn.shape[2] * padded, drawn.shape[2] * padded.astype(np.float64) ** 2


def simulate_balance(lengths: np.ndarray, nodes: int, ranks_per_node: int, per_rank_batch: int,
                     strategy: BalanceStrategy, steps: int = 64, seed: int = 0, bins: list[int] | None = None,
                     unpadded: bool = True, pad_multiple: int = 8, attention_width: int = BERT_LARGE_ATTENTION_WIDTH,
                     deal_how: str = BalanceSpec.presort_deal,
                     lookahead: int = BalanceSpec.balance_lookahead) -> BalanceStats:
    """Simulates `steps` steps of `nodes` x `ranks_per_node` ranks, `per_rank_batch` sequences each, balanced by
    `strategy` (parsed where run.balance or --strategy is read, bert.data.balance), whose row length is the
    longest sequence. `bins`: upper edges of the length bins (default: the lengths' quantiles, as the sampler's
    default); `unpadded`: how the encoder runs the unpacked strategies (packed rows always hold the row length);
    `deal_how`, `lookahead`: run.presort_deal and run.balance_lookahead."""
    max_len = strategy.row_len
    if min(nodes, ranks_per_node, per_rank_batch, steps) < 1:
        raise ValueError("nodes, ranks per node, per-rank batch and steps must each be at least 1")
    lengths = np.asarray(lengths, dtype=np.int64)
    if len(lengths) == 0 or lengths.min() < 1 or lengths.max() > max_len:
        raise ValueError(f"lengths must be between 1 and max_len {max_len}")
    ranks = nodes * ranks_per_node
    rng = np.random.default_rng(seed)
    plan, per_row = None, None
    if strategy.packed:
        tokens, real, real_area, sequences = _packed(lengths, steps, ranks, per_rank_batch, max_len, rng)
        area = real_area  # attention stays inside each sequence of a row
        per_row = float(sequences.sum() / (tokens.sum() / max_len))
    else:
        if strategy.stratified:
            plan = stratified_plan(lengths, bins, per_rank_batch, max_len, attention_width, lookahead)
            drawn = stratified_draws(lengths, plan, steps, ranks, rng)
        else:
            drawn = rng.choice(lengths, size=(steps, ranks, per_rank_batch))
        group = strategy.presort_group(ranks, ranks_per_node)
        if group:
            drawn = presorted(drawn, group, deal_how, attention_width)
        real, real_area = drawn.sum(-1), (drawn.astype(np.float64) ** 2).sum(-1)
        tokens, area = (real, real_area) if unpadded else _padded(drawn, pad_multiple)
    cost = tokens + area / attention_width
    ideal = (real + real_area / attention_width).mean(-1)
    return BalanceStats(
        strategy=strategy.name,
        max_over_mean=float((tokens.max(-1) / tokens.mean(-1)).mean()),
        padding_waste=float(1 - real.sum() / tokens.sum()),
        step_time_ratio=float(cost.max(-1).sum() / ideal.sum()),
        tokens_per_rank=float(tokens.mean()),
        bin_counts=plan.counts if plan is not None else None,
        sequences_per_row=per_row,
    )
