"""The stratified sampler: every per-rank batch draws a fixed count from each length bin.

The counts follow the length mix of the data (bert.data.balance.bin_counts: 6/3/2/5 for a batch of 16 at
the MLPerf mix), measured on the first training shard, which every rank reads, so that all ranks draw the
same counts and every rank and node sees the same mix. A bin too rare to get one draw per batch is merged
into its neighbour, so that no bin's samples pile up unused.

Each rank streams its own shards (bert.data.samplers, already shuffled), splits them by bin and keeps one
pool per bin; a batch takes the next counts[k] samples of pool k, so the order inside a bin is random and no
sample is drawn twice. The fixed counts draw each bin at a rate a little off its share, so the pool of a bin
drawn slower than it arrives grows by that difference (a fraction of a percent of the samples read).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bert.data.balance import bin_counts, bin_of
from bert.data.shards import Samples, read_shard


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
