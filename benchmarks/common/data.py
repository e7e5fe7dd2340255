"""Data a measurement makes for itself or reads: shards of random tokens with MLPerf lengths, samples of a fresh
synthetic corpus, and the first samples of a dataset's shards."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from bert.data.random_samples import random_samples
from bert.data.settings import SyntheticDataSpec
from bert.data.shards import Samples, read_shard
from bert.prep.instances import SampleSpec
from bert.prep.shard_writer import write_shard
from bert.prep.synthetic.hdf5_corpus import synthesize
from bert.simulate.load_balance import named_lengths

VOCAB = 4096  # the synthetic corpora's vocabulary


def write_mlperf_length_shards(folder: Path, seq: int, samples: int, shards: int, seed: int = 0,
                               form: str = "fixed") -> list[Path]:
    """`shards` shards of `form` in `folder` holding `samples` samples of random tokens, their lengths the
    mlperf-wiki mix scaled to `seq` (at least 8 tokens); 15% of each sample masked as the reference masks
    (SampleSpec.masked_count), at most seq // 7 positions."""
    lengths = np.maximum(named_lengths("mlperf-wiki", samples, seed, max_len=seq), 8)
    width = seq // 7
    paths = []
    for k, part in enumerate(np.array_split(lengths, shards)):
        masked = SampleSpec(max_predictions=width).masked_count(part)
        paths.append(folder / f"part-{k:05d}.hdf5")
        write_shard(paths[-1], random_samples(part, VOCAB, width, seed=seed + k, masked=masked), form, seq, width)
    return paths


def read_samples(data: Path, needed: int) -> Samples:
    """The first `needed` samples of the shards in data/train (or in data itself)."""
    shards = sorted((data / "train").glob("*.hdf5")) or sorted(data.glob("*.hdf5"))
    if not shards:
        raise SystemExit(f"{data}: no *.hdf5 shards in it or in its train/ folder")
    parts, count = [], 0
    for shard in shards:
        parts.append(read_shard(shard))
        count += len(parts[-1])
        if count >= needed:
            break
    if count < needed:
        raise SystemExit(f"{data}: {count} samples, fewer than the {needed} the run needs; lower --batches")
    return Samples.concat(parts).take(np.arange(needed))


def synthetic_samples(needed: int, max_seq_length: int, max_predictions: int) -> Samples:
    """`needed` samples of a fresh synthetic corpus (bert.prep.synthetic) of these shapes."""
    spec = SyntheticDataSpec(train_samples=needed, eval_samples=16, shards=1, vocab_size=VOCAB,
                             max_seq_length=max_seq_length, max_predictions=max_predictions)
    with tempfile.TemporaryDirectory(prefix="benchmark-data-") as tmp:
        synthesize(tmp, spec)
        return read_samples(Path(tmp), needed)
