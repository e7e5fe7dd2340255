"""One shard's check (bert.prep.shard_check): each corruption of a sample is one line naming the file and the
sample by its place in the shard, however the shard is cut into blocks; broken files, an unreadable one and the
descriptor's limits are named too."""

import re

import h5py
import numpy as np
import pytest

from bert.data.shards import read_shard
from bert.data.vocab import load_vocab
from bert.prep.shard_check import NO_LIMITS, Limits, verify_shard
from bert.prep.shard_writer import write_shard
from tests.helpers.datasets import copy_dataset

SHARD = "train/part-00001-of-00004.hdf5"


def _replace(f: h5py.File, key: str, data: np.ndarray) -> None:
    del f[key]
    f.create_dataset(key, data=data)


def _row(f: h5py.File) -> int:
    """A sample shorter than the row, with at least two masked positions."""
    lengths = f["input_mask"][:].sum(1)
    counts = (f["masked_lm_positions"][:] > 0).sum(1)
    return int(np.flatnonzero((lengths < f["input_mask"].shape[1] - 2) & (counts >= 2))[0])


def _set(key: str, value_of):
    """A corruption that sets one cell of `key` in sample `row`: value_of(f, row) -> (column, value)."""
    def corrupt(f: h5py.File) -> int:
        row = _row(f)
        column, value = value_of(f, row)
        data = f[key][:]
        if column is None:
            data[row] = value
        else:
            data[row, column] = value
        f[key][...] = data
        return row
    return corrupt


def _length(f, row):
    return int(f["input_mask"][row].sum())


def _count(f, row):
    return int((f["masked_lm_positions"][row] > 0).sum())


def _shorten(f: h5py.File) -> int:
    row = _row(f)
    for key in ("input_ids", "input_mask", "segment_ids"):
        data = f[key][:]
        data[row, 3:] = 0
        f[key][...] = data
    return row


CORRUPTIONS = {
    "token id beyond the vocabulary": (_set("input_ids", lambda f, r: (1, 5000)),
                                       "token id outside the vocabulary of 4096"),
    "no [CLS] first": (_set("input_ids", lambda f, r: (0, 7)), r"does not start with \[CLS\] and end with \[SEP\]"),
    "input_mask with a hole": (_set("input_mask", lambda f, r: (1, 0)), "input_mask is not a run of 1s"),
    "token in the padding": (_set("input_ids", lambda f, r: (_length(f, r) + 1, 9)),
                             "input_ids or segment_ids are not 0 where input_mask is 0"),
    "segment ids that go back": (_set("segment_ids", lambda f, r: (1, 1)),
                                 r"segment_ids are not 0 through the first \[SEP\] and 1 after it"),
    "masked position past the sequence": (
        _set("masked_lm_positions", lambda f, r: (_count(f, r) - 1, _length(f, r) + 1)),
        "a masked position points past the sequence"),
    "masked position on the last [SEP]": (
        _set("masked_lm_positions", lambda f, r: (_count(f, r) - 1, _length(f, r) - 1)),
        r"a masked position points at \[SEP\]"),
    "masked positions out of order": (_set("masked_lm_positions", lambda f, r: (1, 1)),
                                      "masked positions are not increasing"),
    "no masked position": (_set("masked_lm_positions", lambda f, r: (slice(None), 0)), "no masked position"),
    "masked id beyond the vocabulary": (_set("masked_lm_ids", lambda f, r: (0, 99999)),
                                        "masked id outside the vocabulary"),
    "next-sentence label 2": (_set("next_sentence_labels", lambda f, r: (None, 2)),
                              "next_sentence_labels is not 0 or 1"),
    "a three-token sample": (_shorten, r"fewer than 5 tokens"),
}


@pytest.fixture
def dataset(small_dataset, tmp_path):
    return copy_dataset(small_dataset, tmp_path / "data")


def _problems(path, limits: Limits = NO_LIMITS) -> list[str]:
    return verify_shard(path, load_vocab(path.parents[1] / "vocab.txt"), limits).problems


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_each_corruption_is_named_with_the_file_and_the_sample(dataset, name):
    corrupt, message = CORRUPTIONS[name]
    with h5py.File(dataset / SHARD, "r+") as f:
        row = corrupt(f)
    problems = _problems(dataset / SHARD)
    prefix = re.escape(f"{dataset / SHARD}: sample {row}: ")
    assert any(re.match(prefix + message, p) for p in problems), problems


def test_blocks_of_samples_add_up_and_name_samples_by_their_place_in_the_shard(dataset, monkeypatch):
    vocab = load_vocab(dataset / "vocab.txt")
    whole = verify_shard(dataset / SHARD, vocab).stats
    monkeypatch.setattr("bert.prep.shard_check.CHECK_BLOCK", 64)
    pieces = verify_shard(dataset / SHARD, vocab).stats
    assert (pieces.samples, pieces.masked, pieces.random_next) == (whole.samples, whole.masked, whole.random_next)
    assert np.array_equal(pieces.length_counts, whole.length_counts)
    with h5py.File(dataset / SHARD, "r+") as f:
        mask = f["input_mask"][:]
        mask[[100, 300], 1] = 0
        f["input_mask"][...] = mask
    assert _problems(dataset / SHARD) == [f"{dataset / SHARD}: sample 100: input_mask is not a run of 1s followed by "
                                          "0s (and 1 more sample(s))"]


@pytest.mark.parametrize("corrupt, message", [
    (lambda f: _replace(f, "segment_ids", f["segment_ids"][:].astype(np.float32)), "segment_ids has dtype float32"),
    (lambda f: _replace(f, "input_mask", f["input_mask"][:, :-1]), r"input_mask \(63,\) .* must be \[max_seq_length\] "
                                                                    "alike"),
    (lambda f: _replace(f, "masked_lm_ids", f["masked_lm_ids"][:, :-1]), r"masked_lm_positions \(10,\) and "
                                                                        r"masked_lm_ids \(9,\) per sample differ"),
    (lambda f: _replace(f, "next_sentence_labels", f["next_sentence_labels"][:-1]), "different sample counts"),
    (lambda f: f.__delitem__("masked_lm_ids"), r"missing key\(s\) masked_lm_ids"),
])
def test_broken_files_are_named(dataset, corrupt, message):
    with h5py.File(dataset / SHARD, "r+") as f:
        corrupt(f)
    problems = _problems(dataset / SHARD)
    assert len(problems) == 1 and problems[0].startswith(f"{dataset / SHARD}: ")
    assert re.search(message, problems[0])


def test_unreadable_and_varlen_row_mismatches_are_named(dataset):
    (dataset / SHARD).write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 64)
    varlen = dataset / "train/part-00002-of-00004.hdf5"
    write_shard(varlen, read_shard(varlen), "varlen", 64, 10)
    with h5py.File(varlen, "r+") as f:
        f["segment_ids"][3] = np.zeros(2, np.int8)
    assert _problems(dataset / SHARD)[0].startswith(f"{dataset / SHARD}: not a readable HDF5 file")
    assert _problems(varlen) == [f"{varlen}: segment_ids rows do not match input_ids rows"]


def test_the_descriptor_limits_and_an_empty_shard(dataset):
    write_shard(dataset / "train" / "empty.hdf5", read_shard(dataset / SHARD).take(np.arange(0)), "fixed", 64, 10)
    limits = Limits(max_seq_length=60, max_predictions=8)
    empty = dataset / "train" / "empty.hdf5"
    assert _problems(empty, limits) == [f"{empty}: holds no samples"]
    problems = _problems(dataset / SHARD, limits)
    shard = re.escape(str(dataset / SHARD))
    assert any(re.match(rf"{shard}: sample \d+: more than --max-seq-length 60 tokens \(and", p) for p in problems)
    assert any(re.match(rf"{shard}: sample \d+: more than --max-predictions 8 masked positions \(and", p)
               for p in problems)
