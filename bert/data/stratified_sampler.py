"""The stratified sampler: every per-rank batch draws a fixed count from each length bin, steered toward the
cost target that every rank shares.

The counts follow the length mix of the data (bert.data.balance_plans.bin_counts), measured on the first
training shard, which every rank reads, so that all ranks draw the same counts and every rank and node sees
the same mix. Without named bins (run.length_bins null) the bins are the data's own length quantiles, one
per sequence of a batch, so that each draws about once per batch. A bin too rare to get one draw per batch
is merged into its neighbour, so that no bin's samples pile up unused. Among the next (1 + lookahead) x
count samples of each bin, a batch takes those that bring its cost nearest the plan's target
(bert.data.lookahead).

On shard sets written by `mlperf-bert data stratify` (one folder per bin), every rank reads its own shards
of every bin (the paper's layout), one stream per bin, and refills a bin's pool from its own stream when it
runs short, so nothing piles up; the counts then come from the shard headers, the bins' costs from the first
rows of each bin's first shard.

On any other shards, each rank streams its own shards (bert.data.samplers, already shuffled), splits them by
bin and keeps one pool per bin; a batch draws from the front of each pool, so the order inside a bin is
random and no sample is drawn twice. The fixed counts draw each bin at a rate a little off its share (the
share measured on the first shard, rounded to whole draws), so the pool of a bin drawn slower than it arrives
grows by that difference: with MLPerf's shards of some 36,000 samples, a fraction of a percent of the samples
read; more on small shards, where the first one measures the mix less well.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bert.data.balance_plans import bin_counts, bin_of, length_histogram, quantile_bins, sequence_cost
from bert.data.lookahead import Window, steer
from bert.data.shards import Samples, read_shard, shard_header

BIN_FOLDER = re.compile(r"len-(\d+)-(\d+)")
COST_SAMPLE_ROWS = 4096  # rows of each bin's first shard that measure the bin's mean cost


def bin_folder(low: int, high: int) -> str:
    """The folder of bin (low, high] in the output of `data stratify`."""
    return f"len-{low + 1:04d}-{high:04d}"


def binned_shards(paths: list[Path]) -> list[tuple[int, list[Path]]] | None:
    """(upper edge, shards) per bin when every shard lies in a `len-<low>-<high>` folder (the output of
    `data stratify`), in increasing order; None for any other layout."""
    groups: dict[int, list[Path]] = {}
    for path in paths:
        match = BIN_FOLDER.fullmatch(path.parent.name)
        if match is None:
            return None
        groups.setdefault(int(match.group(2)), []).append(path)
    return sorted(groups.items()) if groups else None


@dataclass(frozen=True)
class StratifiedPlan:
    edges: tuple[int, ...]  # upper edges of the bins in use
    counts: tuple[int, ...]  # samples each batch draws from each bin
    bin_costs: tuple[float, ...]  # mean cost of a sample of each bin (bert.data.balance_plans.sequence_cost)
    attention_width: int
    lookahead: int = 0

    @property
    def target(self) -> float:
        """The expected cost of a batch: what every rank steers toward."""
        return float(np.dot(self.counts, self.bin_costs))

    @property
    def window(self) -> Window:
        return Window(self.counts, self.lookahead)


def _mean_costs(lengths: np.ndarray, which: np.ndarray, bins: int, attention_width: int) -> tuple[float, ...]:
    costs = sequence_cost(lengths, attention_width).astype(np.float64)
    sums, sizes = np.bincount(which, costs, minlength=bins), np.bincount(which, minlength=bins)
    return tuple(float(s / n) if n else 0.0 for s, n in zip(sums, sizes))


def stratified_plan(lengths: np.ndarray, edges: list[int] | None, batch: int, max_len: int,
                    attention_width: int, lookahead: int = 0) -> StratifiedPlan:
    """Bin counts for `batch` from the mix of `lengths`, merging bins that would get no draw; edges None: the
    lengths' quantiles, one bin per sequence of the batch."""
    lengths = np.asarray(lengths, dtype=np.int64)
    edges = list(edges) if edges is not None else quantile_bins(length_histogram(lengths, max_len), batch)
    while True:
        which = bin_of(lengths, edges)
        counts = bin_counts(np.bincount(which, minlength=len(edges)), batch)
        empty = np.flatnonzero(counts == 0)
        if len(empty) == 0 or len(edges) == 1:
            return StratifiedPlan(tuple(edges), tuple(int(c) for c in counts),
                                  _mean_costs(lengths, which, len(edges), attention_width), attention_width, lookahead)
        k = int(empty[0])
        del edges[k if k < len(edges) - 1 else k - 1]  # merge bin k into the next one (the last: the one below)


def plan_from_shard(path: Path, edges: list[int] | None, batch: int, max_len: int, attention_width: int,
                    lookahead: int) -> StratifiedPlan:
    return stratified_plan(read_shard(path).lengths, edges, batch, max_len, attention_width, lookahead)


def plan_from_bins(bins: list[tuple[int, list[Path]]], batch: int, attention_width: int,
                   lookahead: int) -> StratifiedPlan:
    """Counts from the sample totals of stratified shard sets (headers), costs from each bin's first rows."""
    totals = np.array([sum(shard_header(p).samples for p in paths) for _, paths in bins])
    costs = []
    for _, paths in bins:
        lengths = read_shard(paths[0], slice(0, COST_SAMPLE_ROWS)).lengths
        costs.append(_mean_costs(lengths, np.zeros(len(lengths), np.int64), 1, attention_width)[0])
    return StratifiedPlan(tuple(edge for edge, _ in bins), tuple(int(c) for c in bin_counts(totals, batch)),
                          tuple(costs), attention_width, lookahead)


class BinPools:
    """One pool per bin of samples waiting to be drawn, oldest first. The samples a window passed over wait in
    front of their pool with the times they were passed over; the pool itself is read through a cursor, so
    that a draw copies only its window."""

    def __init__(self, plan: StratifiedPlan):
        self.plan, self.window = plan, plan.window
        bins = len(plan.counts)
        self.pools: list[Samples | None] = [None] * bins
        self.cursors = [0] * bins
        self.fronts: list[Samples | None] = [None] * bins
        self.waited = [np.zeros(0, np.int64) for _ in range(bins)]

    def add(self, k: int, samples: Samples) -> None:
        pool = self.pools[k]
        self.pools[k] = samples if pool is None else Samples.concat(
            [pool.take(np.arange(self.cursors[k], len(pool))), samples])
        self.cursors[k] = 0

    def _available(self, k: int) -> int:
        waiting = 0 if self.fronts[k] is None else len(self.fronts[k])
        return waiting + (0 if self.pools[k] is None else len(self.pools[k]) - self.cursors[k])

    def short(self) -> list[int]:
        """The bins whose samples cannot fill their window yet."""
        return [k for k, size in enumerate(self.window.sizes) if size and self._available(k) < size]

    def _window(self, k: int) -> Samples:
        need = int(self.window.sizes[k]) - len(self.waited[k])
        fresh = self.pools[k].take(np.arange(self.cursors[k], self.cursors[k] + need))
        self.cursors[k] += need
        return fresh if self.fronts[k] is None else Samples.concat([self.fronts[k], fresh])

    def draw(self) -> Samples:
        """The next batch: counts[k] of each bin's window, steered; the rest of the window waits in front."""
        used = [k for k, size in enumerate(self.window.sizes) if size]
        waited = np.concatenate([np.pad(self.waited[k], (0, int(self.window.sizes[k]) - len(self.waited[k])))
                                 for k in used])
        windows = [self._window(k) for k in used]
        lengths = np.concatenate([w.lengths for w in windows])
        taken = steer(sequence_cost(lengths, self.plan.attention_width), waited, self.window, self.plan.target)
        parts, at = [], 0
        for k, window in zip(used, windows):
            mine = taken[at:at + len(window)]
            parts.append(window.take(np.flatnonzero(mine)))
            self.fronts[k] = window.take(np.flatnonzero(~mine))
            self.waited[k] = waited[at:at + len(window)][~mine] + 1
            at += len(window)
        return Samples.concat(parts)


def stratified_batches(shards: Iterator[tuple[int, Samples]], plan: StratifiedPlan
                       ) -> Iterator[tuple[int, Samples]]:
    """(epoch, batch) from a stream of (epoch, shuffled shard): each batch holds counts[k] samples of bin k."""
    pools = BinPools(plan)
    for epoch, shard in shards:
        which = bin_of(shard.lengths, plan.edges)
        for k in range(len(plan.edges)):
            pools.add(k, shard.take(np.flatnonzero(which == k)))
        while not pools.short():
            yield epoch, pools.draw()


def binned_batches(streams: list[Iterator[tuple[int, Samples]]], plan: StratifiedPlan
                   ) -> Iterator[tuple[int, Samples]]:
    """(epoch, batch) from one stream of shuffled shards per bin; a bin drawn 0 times is never read."""
    pools = BinPools(plan)
    epoch = 0
    while True:
        short = pools.short()
        for k in short:
            epoch_k, shard = next(streams[k])
            epoch = max(epoch, epoch_k)
            pools.add(k, shard)
        if not short:
            yield epoch, pools.draw()
