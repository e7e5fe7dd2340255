"""`mlperf-bert data reshard` and `data eval-set`: re-cut shards without holding the dataset in memory.

Reshard is an external two-pass shuffle. Pass 1 streams the input shards, a block of samples at a time, and
deals every sample to one of K temporary buckets; pass 2 reads one bucket at a time, shuffles it and writes
it as an output shard. Memory is one input block plus one bucket (one output shard), whatever the size of
the dataset; disk needs about the size of the input again for the buckets. The dealing is exact as well as
random: bucket k receives exactly sizes[k] samples, and every arrangement of the samples is equally likely,
because each block draws its bucket counts from a multivariate hypergeometric distribution over what the
buckets still lack. `Buckets` and `deal` are the reusable parts (another caller may deal by length bins).

Eval-set does what the reference `pick_eval_samples` does: of the n samples of the eval output, in order,
it takes sample int(i * (n / N)) for i in 0..N-1.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bert.data.shards import Samples, ShardError, read_shard, row_blocks, shard_header
from bert.mlperf_rules import REFERENCE_PREP
from bert.ownership import (
    OwnedFolder,
    claim_file,
    claim_folder,
    make_folder,
    remove_stale_temporaries,
    temporary_path,
)
from bert.prep.progress import Advance, progress_bar
from bert.prep.shard_writer import ShardWriter
from bert.prep.worker_pool import run_parallel

READ_BLOCK = 16384  # input samples read and dealt at a time
WRITE_BLOCK = 4096  # samples padded and written at a time
BUCKETS = "mlperf-bert-buckets"  # the temporary folder of the buckets: .mlperf-bert-buckets.tmp<pid>


class Buckets:
    """`count` temporary files of samples: appended to a block at a time, read back whole."""

    def __init__(self, folder: Path, count: int):
        self.folder, self.count = folder, count
        folder.mkdir(parents=True, exist_ok=False)

    def _path(self, bucket: int) -> Path:
        return self.folder / f"bucket-{bucket:06d}.npy"

    def append(self, bucket: int, samples: Samples) -> None:
        width = max(1, int((samples.masked_positions > 0).sum(1).max()))
        small = np.int16 if max(samples.tokens.max(initial=0), samples.masked_ids.max(initial=0)) < 2**15 \
            else np.int32
        with open(self._path(bucket), "ab") as f:
            for array in (samples.tokens.astype(small), samples.segments, samples.lengths.astype(np.int32),
                          samples.masked_positions[:, :width].astype(np.int16),
                          samples.masked_ids[:, :width].astype(small), samples.nsp_labels):
                np.save(f, array, allow_pickle=False)

    def read(self, bucket: int, max_predictions: int) -> Samples:
        """The bucket's samples, in the order appended, with masked lists `max_predictions` wide."""
        path = self._path(bucket)
        blocks = [_empty(max_predictions)]  # also sets the width of the concatenation
        if not path.exists():  # a bucket that no sample was dealt to
            return blocks[0]
        size = path.stat().st_size
        with open(path, "rb") as f:
            while f.tell() < size:
                tokens, segments, lengths, positions, ids, nsp = (np.load(f) for _ in range(6))
                offsets = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
                blocks.append(Samples(tokens.astype(np.int32), segments, offsets, positions.astype(np.int32),
                                      ids.astype(np.int32), nsp))
        return Samples.concat(blocks)

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _empty(max_predictions: int) -> Samples:
    return Samples(np.zeros(0, np.int32), np.zeros(0, np.int8), np.zeros(1, np.int64),
                   np.zeros((0, max_predictions), np.int32), np.zeros((0, max_predictions), np.int32),
                   np.zeros(0, np.int8))


def fresh_buckets(scratch: Path, count: int) -> Buckets:
    """`count` empty buckets in a new folder of this process's under `scratch`, after removing those of runs
    that were killed (their process is gone)."""
    make_folder(scratch)
    remove_stale_temporaries(scratch, [BUCKETS])
    return Buckets(temporary_path(scratch / BUCKETS), count)


def near_equal_sizes(total: int, count: int) -> np.ndarray:
    """`count` sizes that add up to `total` and differ by at most one."""
    return np.full(count, total // count, dtype=np.int64) + (np.arange(count) < total % count)


def deal(samples: Samples, lacking: np.ndarray, buckets: Buckets, rng: np.random.Generator) -> None:
    """Deals a block of samples to the buckets; `lacking[k]` (updated) is what bucket k still needs."""
    counts = rng.multivariate_hypergeometric(lacking, len(samples))
    lacking -= counts
    labels = rng.permutation(np.repeat(np.arange(len(lacking)), counts))
    order = np.argsort(labels, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(counts)])
    for bucket in np.flatnonzero(counts):
        buckets.append(int(bucket), samples.take(order[bounds[bucket]:bounds[bucket + 1]]))


def check_fits(path: Path, samples: Samples, shape: OutputShape) -> None:
    if len(samples) and samples.lengths.max() > shape.max_seq_length:
        raise ShardError(f"{path}: holds samples of {samples.lengths.max()} tokens, more than --max-seq-length "
                         f"{shape.max_seq_length}")
    if len(samples) and (samples.masked_positions > 0).sum(1).max() > shape.max_predictions:
        raise ShardError(f"{path}: holds samples with more than --max-predictions {shape.max_predictions} "
                         "masked positions")


@contextmanager
def claim_output(out_dir: Path, inputs: list[Path], overwrite: bool, writer: str, tmp_dir: Path | None
                 ) -> Iterator[OwnedFolder]:
    """The output folder, claimed for `writer` (bert.ownership); its buckets' folder is recorded as its own
    when the buckets are made inside it."""
    mode = "overwrite" if overwrite else "new"
    with claim_folder(out_dir, writer, inputs, mode=mode, again="pass --overwrite to replace them") as folder:
        if tmp_dir is None:
            folder.record(BUCKETS)
        yield folder


@dataclass(frozen=True)
class OutputShape:
    form: str = "fixed"
    max_seq_length: int = REFERENCE_PREP.max_seq_length
    max_predictions: int = REFERENCE_PREP.max_predictions_per_seq


def reshard(inputs: list[Path], out_dir: Path, num_shards: int, seed: int, shape: OutputShape = OutputShape(),
            workers: int = 1, overwrite: bool = False, tmp_dir: Path | None = None,
            show_progress: bool = True, writer: str = "data reshard") -> list[Path]:
    """Writes `num_shards` shards of near-equal size holding every input sample once, shuffled, into
    `out_dir` claimed for `writer` (bert.ownership); pass 2 runs on `workers` processes. The output depends on
    the inputs and the seed only."""
    if num_shards < 1:
        raise ValueError(f"--shards {num_shards} must be at least 1")
    counts = [shard_header(p).samples for p in inputs]
    total = sum(counts)
    if total < num_shards:
        raise ValueError(f"{len(inputs)} input shard(s) hold {total} samples, fewer than --shards {num_shards}")
    names = tuple(out_dir / f"part-{k:05d}-of-{num_shards:05d}.hdf5" for k in range(num_shards))
    with claim_output(out_dir, inputs, overwrite, writer, tmp_dir) as folder:
        folder.record(*(p.name for p in names))
        buckets = fresh_buckets(tmp_dir or out_dir, num_shards)
        try:
            rng = np.random.default_rng(seed)
            lacking = near_equal_sizes(total, num_shards)
            vocab_bound = 0
            with progress_bar("reshard: deal", total, "samples", show_progress) as advance:
                for path, count in zip(inputs, counts):
                    for rows in row_blocks(count, READ_BLOCK):
                        samples = read_shard(path, rows)
                        check_fits(path, samples, shape)
                        vocab_bound = max(vocab_bound, samples.id_bound)
                        deal(samples, lacking, buckets, rng)
                        advance(len(samples))
            write = BucketWriter(buckets, names, seed, shape, vocab_bound)
            with progress_bar("reshard: write", total, "samples", show_progress) as advance:
                return run_parallel(write, range(num_shards), workers, advance)
        finally:
            buckets.remove()


@dataclass(frozen=True)
class BucketWriter:
    """Pass 2 for one bucket: read it, shuffle it, write it as output shard k (to names[k])."""

    buckets: Buckets
    names: tuple[Path, ...]
    seed: int
    shape: OutputShape
    vocab_bound: int

    def __call__(self, k: int, report: Advance) -> Path:
        bucket = self.buckets.read(k, self.shape.max_predictions)
        bucket = bucket.take(np.random.default_rng([self.seed, k]).permutation(len(bucket)))
        path = self.names[k]
        write_samples(path, bucket, self.shape, self.vocab_bound, report)
        return path


def write_samples(path: Path, samples: Samples, shape: OutputShape, vocab_bound: int, report: Advance) -> None:
    """Writes `samples` as one shard of `shape`, a block at a time."""
    with ShardWriter(path, shape.form, shape.max_seq_length, shape.max_predictions, vocab_bound) as writer:
        for first in range(0, len(samples), WRITE_BLOCK):
            block = samples.take(np.arange(first, min(first + WRITE_BLOCK, len(samples))))
            writer.append(block)
            report(len(block))


def eval_pick(available: int, num_samples: int) -> np.ndarray:
    """The records the reference's pick_eval_samples.py takes: int(i * (available / num_samples)) for i in
    range(num_samples), in float64 as it computes them."""
    return (np.arange(num_samples, dtype=np.float64) * (available / num_samples)).astype(np.int64)


def pick_eval_set(inputs: list[Path], out_path: Path, num_samples: int, shape: OutputShape = OutputShape(),
                  overwrite: bool = False, show_progress: bool = True, writer: str = "data eval-set") -> int:
    """Writes the samples the reference's pick_eval_samples.py picks from the inputs (in order, as one
    sequence) to one file, claimed for `writer` (bert.ownership), in order; returns the count."""
    counts = [shard_header(p).samples for p in inputs]
    if sum(counts) < num_samples:
        raise ValueError(f"{inputs[0]}{' ...' if len(inputs) > 1 else ''}: {sum(counts)} samples in "
                         f"{len(inputs)} shard(s), fewer than --samples {num_samples}")
    with claim_file(out_path, writer, inputs, replace=overwrite):
        wanted = eval_pick(sum(counts), num_samples)
        vocab_bound, picked, first = 0, [], 0
        with progress_bar("eval-set", sum(counts), "samples", show_progress) as advance:
            for path, available in zip(inputs, counts):
                for rows in row_blocks(available, READ_BLOCK):
                    take = wanted[(wanted >= first + rows.start) & (wanted < first + rows.stop)] - first - rows.start
                    if len(take):
                        samples = read_shard(path, rows).take(take)
                        check_fits(path, samples, shape)
                        picked.append(samples)
                        vocab_bound = max(vocab_bound, samples.id_bound)
                    advance(rows.stop - rows.start)
                first += available
        write_samples(out_path, Samples.concat(picked), shape, vocab_bound, lambda n: None)
    return num_samples
