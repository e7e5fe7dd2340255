"""Which samples a rank trains on, and in what order.

Every epoch the shard list is shuffled with (seed, epoch), the same on every rank, and dealt out: rank r
takes shards r, r+W, r+2W, ... When there are fewer shards than ranks, ranks share a shard and each takes
every k-th sample of it, so that no sample is used twice in an epoch. Samples inside a shard are shuffled
with (seed, epoch, shard). A different seed gives a different order; the same seed the same order.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class ShardPart:
    """Every `parts`-th sample of a shard, starting at `part`."""

    path: Path
    shard_index: int
    part: int = 0
    parts: int = 1


def rank_shards(paths: list[Path], rank: int, world_size: int, seed: int, epoch: int) -> list[ShardPart]:
    if not paths:
        raise ValueError("no training shards")
    order = np.random.default_rng([seed, epoch]).permutation(len(paths))
    if len(paths) >= world_size:
        return [ShardPart(paths[i], int(i)) for i in order[rank::world_size]]
    i = order[rank % len(paths)]
    sharing = [r for r in range(world_size) if r % len(paths) == rank % len(paths)]
    return [ShardPart(paths[i], int(i), sharing.index(rank), len(sharing))]


def sample_order(num_samples: int, part: ShardPart, seed: int, epoch: int) -> np.ndarray:
    """This rank's samples of the shard, shuffled."""
    mine = np.arange(part.part, num_samples, part.parts)
    return np.random.default_rng([seed, epoch, part.shard_index]).permutation(mine)


def epochs(paths: list[Path], rank: int, world_size: int, seed: int, start_epoch: int = 0
           ) -> Iterator[tuple[int, ShardPart]]:
    """(epoch, shard part) for this rank, epoch after epoch, without end."""
    epoch = start_epoch
    while True:
        for part in rank_shards(paths, rank, world_size, seed, epoch):
            yield epoch, part
        epoch += 1
