"""Exact duplicate samples within a set of shards, and which samples of another file occur in it.

A set (one training set, in one form) is held as one uint64 per sample: the sample's fingerprint
(bert.prep.sample_hashes) with its low bits replaced by the index of its shard. Sorted in place, copies of one
sample lie next to each other, so the whole analysis is one sort and one streaming pass in fixed-size chunks:
memory is 8 bytes per sample (1.25 GB for the 156.7M samples of the MLPerf training set) plus a chunk.
The hash keeps 64 minus the shard bits (51 with 4,320 shards), so chance matches among 156.7M samples add about
n**2 / 2**52, ~5 false pairs, a rate of 3e-8: far below the limit.

DUPLICATE_LIMIT is what the reference's own preprocessing makes, with a margin (measured on real text with
`mlperf-bert data mlperf` at dupe factor 10; docs/data.md has the figures): its copies are short samples (7-22
tokens) of short documents, whose ten passes sometimes mask alike. A set is judged on its whole rate and on
each pair of shards (a shard with itself included), because one shard that repeats another is a small share of
4,320 shards; a pair counts only from MIN_PAIR_SHARED samples on, below which chance decides.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

DUPLICATE_LIMIT = 0.01  # copies per sample of a set, and shared samples per sample of the smaller shard of a pair
MIN_PAIR_SHARED = 10  # fewer shared samples than this never judge a pair
CHUNK = 1 << 20  # sorted keys compared at a time

_U64 = np.uint64


def content_digest(hashes: np.ndarray) -> str:
    """The same for two shards that hold the same samples, in any order."""
    return hashlib.sha256(np.sort(hashes).tobytes()).hexdigest()


@dataclass
class SharedPair:
    first: int  # shard indices; first <= second (equal: copies within one shard)
    second: int
    shared: int
    rate: float  # shared / the smaller shard's samples


@dataclass
class SetDuplicates:
    samples: int
    copies: int  # samples that repeat an earlier one
    worst: SharedPair | None  # the pair sharing the most, for its size
    identical: list[list[int]] = field(default_factory=list)  # shards holding the same samples, in groups

    @property
    def rate(self) -> float:
        return self.copies / max(self.samples, 1)


class SampleSet:
    """The fingerprints of one set of shards, packed with their shard's index (see the module's docstring)."""

    def __init__(self, name: str, paths: list[Path], counts: list[int]):
        self.name, self.paths = name, paths
        self.counts = np.asarray(counts, dtype=np.int64)
        self.bits = max(1, (len(paths) - 1).bit_length())
        self.low = _U64((1 << self.bits) - 1)
        self.keys = np.empty(int(self.counts.sum()), dtype=_U64)
        self.starts = np.concatenate([[0], np.cumsum(self.counts)[:-1]]).astype(np.int64)
        self.filled = np.zeros(len(paths), dtype=np.int64)
        self.digests: list[str | None] = [None] * len(paths)
        self._sorted = False

    def add(self, index: int, hashes: np.ndarray, digest: str) -> None:
        """A shard's fingerprints, all of its samples (fewer when it could not be read whole)."""
        count = min(len(hashes), int(self.counts[index]))
        start = self.starts[index]
        self.keys[start:start + count] = (hashes[:count] & ~self.low) | _U64(index)
        self.filled[index] = count
        self.digests[index] = digest if count == self.counts[index] else None

    def _finish(self) -> None:
        if self._sorted:
            return
        if (self.filled < self.counts).any():  # keep only what was read (a shard with problems of its own)
            self.keys = np.concatenate([self.keys[s:s + f] for s, f in zip(self.starts, self.filled)])
            self.counts = self.filled.copy()
        self.keys.sort()
        self._sorted = True

    def duplicates(self) -> SetDuplicates:
        """Copies are counted against the first of their run in sorted order, which is the shard of the lowest
        index holding the sample: a pair (first shard, other shard) counts what the two share."""
        self._finish()
        keys, n, width = self.keys, len(self.keys), len(self.paths)
        copies, codes, tallies = 0, [], []
        first_shard = int(keys[0] & self.low) if n else 0  # of the run holding the block's first key
        for start in range(0, max(n - 1, 0), CHUNK):
            block = keys[start:start + CHUNK + 1]
            shards = (block & self.low).astype(np.int64)
            same = (block[1:] ^ block[:-1]) <= self.low  # block[t + 1] repeats block[t]
            run = np.cumsum(np.concatenate([[0], ~same]))  # the run of each key, 0 = begun before the block
            firsts = np.concatenate([[first_shard], shards[1:][~same]])[run]
            first_shard = int(firsts[-1])
            copy = np.flatnonzero(same) + 1
            if len(copy):
                copies += len(copy)
                pair, tally = np.unique(firsts[copy] * width + shards[copy], return_counts=True)
                codes.append(pair)
                tallies.append(tally)
        return SetDuplicates(n, copies, self._worst(codes, tallies), self._identical())

    def _worst(self, codes: list[np.ndarray], tallies: list[np.ndarray]) -> SharedPair | None:
        if not codes:
            return None
        pair, where = np.unique(np.concatenate(codes), return_inverse=True)
        shared = np.bincount(where, weights=np.concatenate(tallies)).astype(np.int64)
        first, second = pair // len(self.paths), pair % len(self.paths)
        rate = shared / np.maximum(np.minimum(self.counts[first], self.counts[second]), 1)
        judged = np.where(shared >= MIN_PAIR_SHARED, rate, -1.0)
        k = int(np.argmax(judged)) if judged.max() >= 0 else int(np.argmax(shared))
        return SharedPair(int(first[k]), int(second[k]), int(shared[k]), float(rate[k]))

    def _identical(self) -> list[list[int]]:
        groups: dict[str, list[int]] = {}
        for index, digest in enumerate(self.digests):
            if digest is not None and self.counts[index] > 0:
                groups.setdefault(digest, []).append(index)
        return [g for g in groups.values() if len(g) > 1]

    def members(self, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(whether each fingerprint is one of this set's samples, the index of a shard holding it or -1)."""
        self._finish()
        probe = hashes & ~self.low
        at = np.searchsorted(self.keys, probe)
        inside = at < len(self.keys)
        found = np.zeros(len(hashes), dtype=bool)
        found[inside] = (self.keys[at[inside]] & ~self.low) == probe[inside]
        shard = np.full(len(hashes), -1, dtype=np.int64)
        shard[found] = (self.keys[at[found]] & self.low).astype(np.int64)
        return found, shard


def judge_duplicates(training: SampleSet, found: SetDuplicates, root: Path) -> tuple[dict, list[str], str]:
    """(figures for the manifest, problems, the summary line) of one set's duplicates."""
    def name(index: int) -> str:
        return _relative(training.paths[index], root)

    worst = found.worst
    figures = {"samples": found.samples, "copies": found.copies, "rate": found.rate, "limit": DUPLICATE_LIMIT,
               "worst_pair": None if worst is None else {"shards": [name(worst.first), name(worst.second)],
                                                         "shared": worst.shared, "rate": worst.rate},
               "identical": [[name(i) for i in group] for group in found.identical]}
    line = (f"duplicates in {training.name}: {found.copies:,} of {found.samples:,} samples repeat another "
            f"({found.rate:.3%}; the limit is {DUPLICATE_LIMIT:.0%})")
    if worst is not None:
        line += f"; the most shared: {_pair(training, worst)}"
    problems = [f"{training.paths[g[0]]} and {training.paths[g[1]]} hold the same {int(training.counts[g[0]]):,} "
                f"samples: identical shards{f' ({len(g)} shards hold them)' if len(g) > 2 else ''}; make the shards "
                "again from their source" for g in found.identical]
    pair_over = worst is not None and worst.shared >= MIN_PAIR_SHARED and worst.rate > DUPLICATE_LIMIT
    if not problems and (found.rate > DUPLICATE_LIMIT or pair_over):
        problems.append(f"{training.name}: {found.rate:.2%} of its {found.samples:,} samples repeat another, and "
                        f"{_pair(training, worst)}: more than the {DUPLICATE_LIMIT:.0%} that the reference's own "
                        "preprocessing stays under; make the shards again from their source")
    return figures, problems, line


def _pair(training: SampleSet, pair: SharedPair) -> str:
    first, second = training.paths[pair.first], training.paths[pair.second]
    if pair.first == pair.second:
        return f"{first} repeats {pair.shared:,} of its own samples ({pair.rate:.2%})"
    return f"{first} and {second} share {pair.shared:,} sample(s) ({pair.rate:.2%} of the smaller)"


def _relative(path: Path, root: Path) -> str:
    return Path(os.path.relpath(path, root)).as_posix()
