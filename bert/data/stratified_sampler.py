"""The stratified sampler: every per-rank batch draws a fixed count from each length bin, steered toward the
cost target that every rank shares (bert.data.lookahead).

A `StratifiedPlan` holds the bins' upper edges, each bin's count per batch, its mean cost and the target:
`plan_from_shard` measures it on a shard every rank reads (bins without a draw merged into a neighbour; without
run.length_bins, the lengths' quantiles, one bin per sequence of a batch), `plan_from_bins` on the shard sets
`mlperf-bert data stratify` writes (one folder per bin, `bin_folder`). `stratified_batches` yields (epoch, batch)
from one stream of shuffled shards, split by bin into pools (`BinPools`); `binned_batches` from one stream per
bin, refilling a bin's pool from its own stream. Each batch holds counts[k] samples of bin k, no sample twice.
Why the counts come from the first shard, and how far a pool can grow: docs/performance.md, "Load balance".
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bert.data.balance_plans import bin_counts, bin_of, length_histogram, quantile_bins, sequence_cost
from bert.data.lookahead import Window, steer
from bert.data.shards import Samples, ShardError, read_shard, shard_header

BIN_FOLDER = re.compile(r"len-(\d+)-(\d+)")
COST_SAMPLE_ROWS = 4096  # rows of each bin's first shard that measure the bin's mean cost


def bin_folder(low: int, high: int) -> str:
    """The folder of bin (low, high] in the output of `data stratify`."""
    return f"len-{low + 1:04d}-{high:04d}"


BinnedShards = list[tuple[int, list[Path]]]  # (upper edge, shards) per length bin, in increasing order


def binned_shards(paths: list[Path]) -> BinnedShards | None:
    """(upper edge, shards) per bin when the shards lie in `len-<low>-<high>` folders (the output of
    `data stratify`); None when none does. Some in such folders and some not is no layout: a ShardError."""
    groups: dict[int, list[Path]] = {}
    loose = []
    for path in paths:
        match = BIN_FOLDER.fullmatch(path.parent.name)
        if match is None:
            loose.append(path)
        else:
            groups.setdefault(int(match.group(2)), []).append(path)
    if groups and loose:
        raise ShardError(f"{loose[0].parent}: holds training shards outside the len-<low>-<high> folders of "
                         f"`mlperf-bert data stratify` beside {len(groups)} such folder(s), and run.dataset.train_glob "
                         "matches both: point it at one layout (e.g. \"train/len-*/*.hdf5\" or \"train/*.hdf5\")")
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


def plan_from_bins(bins: BinnedShards, batch: int, attention_width: int,
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
    front of their pool with the times they were passed over. Pools and windows hold references (shard number
    and row) and lengths, not samples: a draw gathers its batch from the shards once, however many bins it
    draws from (a batch of 56 MLPerf sequences draws from about 50), and a shard is let go once no pool
    refers to it."""

    def __init__(self, plan: StratifiedPlan):
        self.plan, self.window = plan, plan.window
        bins = len(plan.counts)
        self.shards: dict[int, Samples] = {}  # by the number of the shard, counted from 0 as they are added
        self.added = 0
        self.pools = [_References.empty() for _ in range(bins)]
        self.fronts = [_References.empty() for _ in range(bins)]
        self.waited = [np.zeros(0, np.int64) for _ in range(bins)]

    def add(self, shard: Samples, which: np.ndarray) -> None:
        """A shard whose row i belongs to bin which[i] (a bin number, or -1: none)."""
        number, self.added = self.added, self.added + 1
        self.shards[number] = shard
        for k in range(len(self.pools)):
            rows = np.flatnonzero(which == k)
            if len(rows):
                self.pools[k] = self.pools[k].then(_References.of(number, rows, shard.lengths[rows]))
        referenced = [r.refs[0] >> _ROW_BITS for r in (*self.pools, *self.fronts) if len(r.refs)]
        oldest = min(referenced, default=number)
        for old in [n for n in self.shards if n < oldest]:
            del self.shards[old]

    def short(self) -> list[int]:
        """The bins whose samples cannot fill their window yet."""
        return [k for k, size in enumerate(self.window.sizes)
                if size and len(self.fronts[k].refs) + len(self.pools[k].refs) < size]

    def _window(self, k: int, size: int) -> _References:
        fresh, self.pools[k] = self.pools[k].split(size - len(self.waited[k]))
        return self.fronts[k].then(fresh)

    def draw(self) -> Samples:
        """The next batch: counts[k] of each bin's window, steered; the rest of the window waits in front."""
        sizes = self.window.sizes
        used = [k for k, size in enumerate(sizes) if size]
        waited = np.zeros(int(sizes.sum()), np.int64)  # the fresh samples of each window have waited 0 times
        starts = np.cumsum([0] + [int(sizes[k]) for k in used])
        for k, start in zip(used, starts):
            waited[start:start + len(self.waited[k])] = self.waited[k]
        windows = [self._window(k, int(sizes[k])) for k in used]
        lengths = np.concatenate([w.lengths for w in windows])
        taken = steer(sequence_cost(lengths, self.plan.attention_width), waited, self.window, self.plan.target)
        parts, at = [], 0
        for k, window in zip(used, windows):
            mine = taken[at:at + len(window.refs)]
            parts.append(window.refs[mine])
            self.fronts[k] = window.select(~mine)
            self.waited[k] = waited[at:at + len(window.refs)][~mine] + 1
            at += len(window.refs)
        return self._gather(np.concatenate(parts))

    def _gather(self, refs: np.ndarray) -> Samples:
        """The samples of `refs`, in that order: one take from each shard they lie in."""
        numbers, rows = refs >> _ROW_BITS, refs & ((1 << _ROW_BITS) - 1)
        shards = np.unique(numbers)
        if len(shards) == 1:
            return self.shards[int(shards[0])].take(rows)
        order = np.argsort(numbers, kind="stable")
        grouped = Samples.concat([self.shards[int(n)].take(rows[order][numbers[order] == n]) for n in shards])
        return grouped.take(np.argsort(order, kind="stable"))


_ROW_BITS = 40  # a reference: the shard's number above these bits, the row below


@dataclass(frozen=True)
class _References:
    """Samples by reference, in order, with their lengths."""

    refs: np.ndarray  # shard number << _ROW_BITS | row
    lengths: np.ndarray

    @staticmethod
    def of(shard: int, rows: np.ndarray, lengths: np.ndarray) -> _References:
        return _References((shard << _ROW_BITS) + rows.astype(np.int64), lengths)

    @staticmethod
    def empty() -> _References:
        return _References(np.zeros(0, np.int64), np.zeros(0, np.int64))

    def then(self, other: _References) -> _References:
        return _References(np.concatenate([self.refs, other.refs]), np.concatenate([self.lengths, other.lengths]))

    def split(self, count: int) -> tuple[_References, _References]:
        """The first `count`, and the rest."""
        return (_References(self.refs[:count], self.lengths[:count]),
                _References(self.refs[count:], self.lengths[count:]))

    def select(self, mask: np.ndarray) -> _References:
        return _References(self.refs[mask], self.lengths[mask])


def stratified_batches(shards: Iterator[tuple[int, Samples]], plan: StratifiedPlan
                       ) -> Iterator[tuple[int, Samples]]:
    """(epoch, batch) from a stream of (epoch, shuffled shard): each batch holds counts[k] samples of bin k."""
    pools = BinPools(plan)
    for epoch, shard in shards:
        pools.add(shard, bin_of(shard.lengths, plan.edges))
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
            pools.add(shard, np.full(len(shard), k))
        if not short:
            yield epoch, pools.draw()
