"""`mlperf-bert data stratify`: split shards into one shard set per length bin, for the stratified sampler.

The bins are named edges, or by default the data's own length quantiles (bert.data.balance_plans.quantile_bins:
bins of near-equal share, as many as the per-rank batch the sets are for), measured in the first pass. The
output holds one folder per bin, `len-<low>-<high>/part-k-of-K.hdf5` (low < length <= high; the first bin
starts at 1), each with `shards_per_bin` shards of near-equal size, every input sample in exactly one shard
of its bin, shuffled. It is reshard's external two-pass shuffle with the buckets grouped by bin (the same
Buckets, exact dealing and writer pool, bert.prep.reshard), after a first pass that counts each bin's
samples: memory stays one input block plus one output shard per worker.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bert.data.balance import length_bins_problem
from bert.data.balance_plans import bin_of, quantile_bins
from bert.data.shards import Samples, read_shard, row_blocks, shard_header
from bert.data.stratified_sampler import bin_folder
from bert.prep.progress import progress_bar
from bert.prep.reshard import (
    READ_BLOCK,
    Buckets,
    BucketWriter,
    OutputShape,
    check_fits,
    claim_output,
    deal,
    fresh_buckets,
    near_equal_sizes,
)
from bert.prep.worker_pool import run_parallel


@dataclass(frozen=True)
class _Bin:
    """Deals into buckets first .. first + count - 1 of a shared Buckets (one bin's shards)."""

    buckets: Buckets
    first: int

    def append(self, bucket: int, samples: Samples) -> None:
        self.buckets.append(self.first + bucket, samples)


def _check_edges(edges: list[int], shape: OutputShape) -> None:
    problem = length_bins_problem(edges, shape.max_seq_length)
    if problem:
        raise ValueError(f"--bins: {problem}")


def _count_lengths(inputs: list[Path], counts: list[int], shape: OutputShape, show_progress: bool
                   ) -> tuple[np.ndarray, int]:
    """Samples of each length 0..max_seq_length, and the bound of the token ids, from a first pass."""
    histogram, vocab_bound = np.zeros(shape.max_seq_length + 1, np.int64), 0
    with progress_bar("stratify: count", sum(counts), "samples", show_progress) as advance:
        for path, count in zip(inputs, counts):
            for rows in row_blocks(count, READ_BLOCK):
                samples = read_shard(path, rows)
                check_fits(path, samples, shape)
                histogram += np.bincount(samples.lengths, minlength=len(histogram))
                vocab_bound = max(vocab_bound, samples.id_bound)
                advance(len(samples))
    return histogram, vocab_bound


def stratify(inputs: list[Path], out_dir: Path, edges: list[int] | None, shards_per_bin: int, seed: int,
             shape: OutputShape | None = None, workers: int = 1, overwrite: bool = False,
             tmp_dir: Path | None = None, show_progress: bool = True, bin_count: int = 16,
             writer: str = "data stratify") -> list[Path]:
    """Writes `shards_per_bin` shards for every bin that has samples into `out_dir`, claimed for `writer` (each
    bin folder too; bert.ownership); returns their paths, bin by bin. Edges None: `bin_count` quantile bins of
    the inputs' lengths."""
    shape = shape or OutputShape()
    if edges is not None:
        _check_edges(edges, shape)
    if shards_per_bin < 1:
        raise ValueError(f"--shards {shards_per_bin} must be at least 1")
    if bin_count < 1:
        raise ValueError(f"--bin-count {bin_count} must be at least 1")
    counts = [shard_header(p).samples for p in inputs]
    histogram, vocab_bound = _count_lengths(inputs, counts, shape, show_progress)
    if edges is None:
        edges = quantile_bins(histogram, bin_count)
    per_bin = np.bincount(bin_of(np.arange(len(histogram)), edges), histogram, minlength=len(edges)).astype(np.int64)
    used = [k for k in range(len(edges)) if per_bin[k] >= shards_per_bin]
    if len(used) < np.count_nonzero(per_bin):
        thin = next(k for k in range(len(edges)) if 0 < per_bin[k] < shards_per_bin)
        raise ValueError(f"bin {thin} (lengths up to {edges[thin]}) holds {per_bin[thin]} samples, fewer than "
                         f"--shards {shards_per_bin}; use fewer shards or wider bins")
    folders = {k: bin_folder(edges[k - 1] if k else 0, edges[k]) for k in used}
    with claim_output(out_dir, inputs, overwrite, writer, tmp_dir) as owned:
        with ExitStack() as bins:
            for folder in folders.values():
                bins.enter_context(owned.subfolder(folder, mode="new")).record(
                    *(f"part-{j:05d}-of-{shards_per_bin:05d}.hdf5" for j in range(shards_per_bin)))
            names = tuple(out_dir / folders[k] / f"part-{j:05d}-of-{shards_per_bin:05d}.hdf5"
                          for k in used for j in range(shards_per_bin))
            return _deal_and_write(inputs, counts, edges, used, per_bin, names, seed, shape, vocab_bound, workers,
                                   tmp_dir or out_dir, show_progress)


def _deal_and_write(inputs: list[Path], counts: list[int], edges: list[int], used: list[int], per_bin: np.ndarray,
                    names: tuple[Path, ...], seed: int, shape: OutputShape, vocab_bound: int, workers: int,
                    scratch: Path, show_progress: bool) -> list[Path]:
    """Pass 2 of stratify: every sample dealt to a bucket of its bin, each bucket written as a shard."""
    shards_per_bin = len(names) // len(used)
    buckets = fresh_buckets(scratch, len(names))
    try:
        rng = np.random.default_rng(seed)
        lacking = np.concatenate([near_equal_sizes(int(per_bin[k]), shards_per_bin) for k in used])
        seat = {k: i * shards_per_bin for i, k in enumerate(used)}
        with progress_bar("stratify: deal", sum(counts), "samples", show_progress) as advance:
            for path, count in zip(inputs, counts):
                for rows in row_blocks(count, READ_BLOCK):
                    samples = read_shard(path, rows)
                    which = bin_of(samples.lengths, edges)
                    for k in used:
                        mine = samples.take(np.flatnonzero(which == k))
                        first = seat[k]
                        deal(mine, lacking[first:first + shards_per_bin], _Bin(buckets, first), rng)
                    advance(len(samples))
        write = BucketWriter(buckets, names, seed, shape, vocab_bound)
        with progress_bar("stratify: write", sum(counts), "samples", show_progress) as advance:
            return run_parallel(write, range(len(names)), workers, advance)
    finally:
        buckets.remove()
