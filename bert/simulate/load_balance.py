"""The load-balance simulator: how evenly each strategy spreads a step's work over the ranks.

Per step, every rank draws its per-rank batch of sequence lengths the way the strategy's sampler would
(uniformly at random, or a fixed count from each length bin), the presorting strategies redeal the gathered
sequences in snake order within a node or across all ranks, and each rank's work is costed:

    cost(rank) = computed tokens + attention area / attention_width

where computed tokens are the real tokens when the encoder runs unpadded, batch x padded length when it runs
padded, and rows x row length when packed; the attention area is the sum of squared lengths (per-sequence
attention: unpadded or packed with boundaries) or batch x padded length squared (padded). With BERT's
per-token dense work 12 h^2 and attention 2 h per token pair, attention_width = 6 h (6,144 for BERT-large).
A step takes as long as its slowest rank; perfect balance is the step's total real work split evenly.

Samples are drawn with replacement from the length distribution: a model of the step, not of an epoch.
The planning functions are those the training data path uses (bert.data.balance_plans).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bert.data.balance_plans import PAPER_BINS, STRATEGIES, bin_of, pack_rows, snake_deal
from bert.data.shards import read_shard, row_blocks, shard_header
from bert.data.stratified_sampler import stratified_plan

NAMED_DISTRIBUTIONS = ("mlperf-wiki",)
BERT_LARGE_ATTENTION_WIDTH = 6 * 1024


@dataclass(frozen=True)
class BalanceStats:
    strategy: str
    max_over_mean: float  # computed tokens of the busiest rank / the mean over ranks, averaged over steps
    padding_waste: float  # share of computed tokens that are padding
    step_time_ratio: float  # expected step time / perfect balance, under the cost model
    tokens_per_rank: float  # computed tokens per rank and step, on average
    real_tokens_per_rank: float  # real tokens per rank and step, on average
    bin_counts: tuple[int, ...] | None = None  # per-rank draws from each bin in use (stratified strategies)


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


def _draw(lengths: np.ndarray, shape: tuple[int, int, int], strategy: str, bins: list[int],
          rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None]:
    """[steps, ranks, batch] lengths as the strategy's sampler draws them, and the per-bin counts."""
    if not strategy.startswith("stratified"):
        return rng.choice(lengths, size=shape), None
    plan = stratified_plan(lengths, bins, shape[2])  # as the sampler plans it: too-rare bins merged
    which = bin_of(lengths, plan.edges)
    parts = [rng.choice(lengths[which == k], size=(*shape[:2], c)) for k, c in enumerate(plan.counts)]
    return np.concatenate(parts, axis=2), np.array(plan.counts)


def _presort(drawn: np.ndarray, groups: int) -> np.ndarray:
    """[steps, G*k, batch] -> the same sequences, gathered by `groups` consecutive ranks and snake-dealt."""
    steps, ranks, batch = drawn.shape
    gathered = drawn.reshape(steps, ranks // groups, groups * batch)
    ordered = -np.sort(-gathered, axis=-1)
    seat = snake_deal(np.arange(groups * batch)[::-1], groups)  # the receiver of the j-th longest
    dealt = ordered[..., np.argsort(seat, kind="stable")]
    return dealt.reshape(steps, ranks, batch)


def _packed_rows(drawn: np.ndarray, row_len: int) -> np.ndarray:
    rows = np.empty(drawn.shape[:2], dtype=np.int64)
    for index in np.ndindex(*drawn.shape[:2]):
        rows[index] = pack_rows(drawn[index], row_len).max() + 1
    return rows


def _work(drawn: np.ndarray, strategy: str, unpadded: bool, max_len: int, pad_multiple: int,
          attention_width: float) -> tuple[np.ndarray, np.ndarray]:
    """(computed tokens, cost) of every [step, rank]."""
    batch = drawn.shape[2]
    if strategy == "packed":
        tokens = _packed_rows(drawn, max_len) * max_len
        area = (drawn.astype(np.float64) ** 2).sum(-1)
    elif unpadded:
        tokens = drawn.sum(-1)
        area = (drawn.astype(np.float64) ** 2).sum(-1)
    else:
        padded = -(-drawn.max(-1) // pad_multiple) * pad_multiple
        tokens = batch * padded
        area = batch * padded.astype(np.float64) ** 2
    return tokens, tokens + area / attention_width


def simulate_balance(lengths: np.ndarray, nodes: int, ranks_per_node: int, per_rank_batch: int, strategy: str,
                     steps: int = 64, seed: int = 0, bins: list[int] | None = None, unpadded: bool = True,
                     max_len: int = 512, pad_multiple: int = 8,
                     attention_width: float = BERT_LARGE_ATTENTION_WIDTH) -> BalanceStats:
    """Simulates `steps` steps of `nodes` x `ranks_per_node` ranks, `per_rank_batch` sequences each.
    `bins`: upper edges of the length bins (the paper's four by default); `unpadded`: how the encoder runs
    the unpacked strategies (packed rows always hold `max_len` tokens)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    if min(nodes, ranks_per_node, per_rank_batch, steps) < 1:
        raise ValueError("nodes, ranks per node, per-rank batch and steps must each be at least 1")
    lengths = np.asarray(lengths, dtype=np.int64)
    if len(lengths) == 0 or lengths.min() < 1 or lengths.max() > max_len:
        raise ValueError(f"lengths must be between 1 and max_len {max_len}")
    ranks = nodes * ranks_per_node
    rng = np.random.default_rng(seed)
    drawn, counts = _draw(lengths, (steps, ranks, per_rank_batch), strategy, list(bins or PAPER_BINS), rng)
    if strategy == "stratified+local_presort":
        drawn = _presort(drawn, ranks_per_node)
    elif strategy == "global_presort":
        drawn = _presort(drawn, ranks)
    tokens, cost = _work(drawn, strategy, unpadded, max_len, pad_multiple, attention_width)
    real = drawn.sum(-1)
    ideal = (real + (drawn.astype(np.float64) ** 2).sum(-1) / attention_width).mean(-1)
    return BalanceStats(
        strategy=strategy,
        max_over_mean=float((tokens.max(-1) / tokens.mean(-1)).mean()),
        padding_waste=float(1 - real.sum() / tokens.sum()),
        step_time_ratio=float(cost.max(-1).sum() / ideal.sum()),
        tokens_per_rank=float(tokens.mean()),
        real_tokens_per_rank=float(real.mean()),
        bin_counts=tuple(int(c) for c in counts) if counts is not None else None,
    )
