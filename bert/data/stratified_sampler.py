"""The stratified sampler: every per-rank batch draws a fixed count from each length bin.

The counts follow the length mix of the data (bert.data.balance_plans.bin_counts: 6/3/2/5 for a batch of 16 at
the MLPerf mix), measured on the first training shard, which every rank reads, so that all ranks draw the
same counts and every rank and node sees the same mix. A bin too rare to get one draw per batch is merged
into its neighbour, so that no bin's samples pile up unused.

On shard sets written by `mlperf-bert data stratify` (one folder per bin), every rank reads its own shards
of every bin (the paper's layout), one stream per bin, and refills a bin's pool from its own stream when it
runs short, so nothing piles up; the counts then come from the shard headers alone.

On any other shards, each rank streams its own shards (bert.data.samplers, already shuffled), splits them by
bin and keeps one pool per bin; a batch takes the next counts[k] samples of pool k, so the order inside a
bin is random and no sample is drawn twice. The fixed counts draw each bin at a rate a little off its share,
so the pool of a bin drawn slower than it arrives grows by that difference (a fraction of a percent of the
samples read).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bert.data.balance_plans import bin_counts, bin_of
from bert.data.shards import Samples, read_shard, shard_header

BIN_FOLDER = re.compile(r"len-(\d+)-(\d+)")


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


def stratified_plan(lengths: np.ndarray, edges: list[int], batch: int) -> StratifiedPlan:
    """Bin counts for `batch` from the mix of `lengths`, merging bins that would get no draw."""
    edges = list(edges)
    while True:
        share = np.bincount(bin_of(lengths, edges), minlength=len(edges))
        counts = bin_counts(share, batch)
        empty = np.flatnonzero(counts == 0)
        if len(empty) == 0 or len(edges) == 1:
            return StratifiedPlan(tuple(edges), tuple(int(c) for c in counts))
        k = int(empty[0])
        del edges[k if k < len(edges) - 1 else k - 1]  # merge bin k into the next one (the last: the one below)


def plan_from_shard(path: Path, edges: list[int], batch: int) -> StratifiedPlan:
    return stratified_plan(read_shard(path).lengths, edges, batch)


def stratified_batches(shards: Iterator[tuple[int, Samples]], plan: StratifiedPlan
                       ) -> Iterator[tuple[int, Samples]]:
    """(epoch, batch) from a stream of (epoch, shuffled shard): each batch holds counts[k] samples of bin k."""
    pools: list[Samples] | None = None
    for epoch, shard in shards:
        which = bin_of(shard.lengths, plan.edges)
        fresh = [shard.take(np.flatnonzero(which == k)) for k in range(len(plan.edges))]
        pools = fresh if pools is None else [Samples.concat([p, f]) for p, f in zip(pools, fresh)]
        ready = min(len(p) // c for p, c in zip(pools, plan.counts))
        for j in range(ready):
            yield epoch, Samples.concat([p.take(np.arange(j * c, (j + 1) * c)) for p, c in zip(pools, plan.counts)])
        pools = [p.take(np.arange(ready * c, len(p))) for p, c in zip(pools, plan.counts)]


def plan_from_bins(bins: list[tuple[int, list[Path]]], batch: int) -> StratifiedPlan:
    """Counts from the sample totals of stratified shard sets (headers only)."""
    totals = np.array([sum(shard_header(p).samples for p in paths) for _, paths in bins])
    return StratifiedPlan(tuple(edge for edge, _ in bins), tuple(int(c) for c in bin_counts(totals, batch)))


def binned_batches(streams: list[Iterator[tuple[int, Samples]]], plan: StratifiedPlan
                   ) -> Iterator[tuple[int, Samples]]:
    """(epoch, batch) from one stream of shuffled shards per bin; a bin drawn 0 times is never read."""
    pools: list[Samples | None] = [None] * len(streams)
    cursors = [0] * len(streams)
    epoch = 0
    while True:
        for k, count in enumerate(plan.counts):
            while count and (pools[k] is None or len(pools[k]) - cursors[k] < count):
                epoch_k, shard = next(streams[k])
                epoch = max(epoch, epoch_k)
                rest = [] if pools[k] is None else [pools[k].take(np.arange(cursors[k], len(pools[k])))]
                pools[k], cursors[k] = Samples.concat([*rest, shard]), 0
        parts = []
        for k, count in enumerate(plan.counts):
            if count:
                parts.append(pools[k].take(np.arange(cursors[k], cursors[k] + count)))
                cursors[k] += count
        yield epoch, Samples.concat(parts)
