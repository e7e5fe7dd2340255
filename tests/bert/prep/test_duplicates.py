"""Exact duplicate samples: the fingerprint of a sample, the streaming analysis of a set of shards, and the two
failures that capped MLPerf accuracy (identical shards, a shard that repeats part of another) as `data verify`
reports them."""

import shutil

import numpy as np
import pytest
from click.testing import CliRunner

import bert.prep.duplicates as duplicates
from bert.cli import main
from bert.data.shards import Samples, read_shard
from bert.prep.duplicates import SampleSet, content_digest
from bert.prep.shard_writer import write_shard
from tests.helpers.datasets import copy_dataset

SHARD = "train/part-{:05d}-of-00004.hdf5"


def test_copies_across_chunks_are_counted_against_the_first_shard_holding_them(monkeypatch):
    monkeypatch.setattr(duplicates, "CHUNK", 7)  # runs of copies cross many chunk boundaries
    rng = np.random.default_rng(0)
    first = rng.integers(0, 2**63, 50, dtype=np.uint64)
    second = np.concatenate([first[:10], rng.integers(0, 2**63, 40, dtype=np.uint64)])
    shards = [first, second, first[::-1].copy(), np.repeat(second[10:12], 3)]
    sample_set = SampleSet("train/", [f"part-{i}" for i in range(4)], [len(s) for s in shards])
    for i, hashes in enumerate(shards):
        sample_set.add(i, hashes, content_digest(hashes))
    found = sample_set.duplicates()
    assert (found.samples, found.copies) == (156, 156 - 90)  # 50 + 40 distinct samples
    assert found.identical == [[0, 2]]  # the same samples in another order
    worst = found.worst
    assert (worst.first, worst.second, worst.shared, worst.rate) == (0, 2, 50, 1.0)
    present, holder = sample_set.members(np.array([second[11], first[3], 12345], dtype=np.uint64))
    assert present.tolist() == [True, True, False] and holder.tolist()[:2] == [1, 0]


def _repeat_a_quarter(data):
    """The first quarter of shard 1 replaced by the first quarter of shard 0."""
    zero, one = read_shard(data / SHARD.format(0)), read_shard(data / SHARD.format(1))
    quarter = len(one) // 4
    mixed = Samples.concat([zero.take(np.arange(quarter)), one.take(np.arange(quarter, len(one)))])
    write_shard(data / SHARD.format(1), mixed, "fixed", 64, 10)


def _four_copies(data):
    for k in (1, 2, 3):
        shutil.copy(data / SHARD.format(0), data / SHARD.format(k))


@pytest.mark.parametrize("corrupt, problem", [
    (_four_copies, "{data}/train/part-00000-of-00004.hdf5 and {data}/train/part-00001-of-00004.hdf5 hold the same "
                   "512 samples: identical shards (4 shards hold them); make the shards again from their source"),
    (_repeat_a_quarter, "train/ (fixed form): 6.25% of its 2,048 samples repeat another, and {data}/train/"
                        "part-00000-of-00004.hdf5 and {data}/train/part-00001-of-00004.hdf5 share 128 sample(s) "
                        "(25.00% of the smaller): more than the 1% that the reference's own preprocessing stays "
                        "under; make the shards again from their source"),
])
def test_verify_fails_duplicated_shards_with_one_line(small_dataset, tmp_path, corrupt, problem):
    data = copy_dataset(small_dataset, tmp_path / "data")
    clean = CliRunner().invoke(main, ["data", "verify", str(data), "--workers", "1", "--quiet"])
    assert clean.exit_code == 0
    assert "duplicates in train/ (fixed form): 0 of 2,048 samples repeat another (0.000%; the limit is 1%)" in \
        clean.output
    corrupt(data)
    result = CliRunner().invoke(main, ["data", "verify", str(data), "--workers", "1", "--quiet"])
    problems = [line for line in result.stderr.splitlines() if not line.startswith("Error: ")]
    assert result.exit_code == 1 and problems == [problem.format(data=data)]
