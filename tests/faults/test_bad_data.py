"""Bad data is caught before run_start where that costs little (HDF5 metadata, what `data verify` proved and
recorded in the manifest), and otherwise named by its shard and sample when the loader meets it: never an
`IndexError: index out of range in self` mid-run, never a vocabulary that silently does not match."""

from __future__ import annotations

import json
import re

import h5py
import numpy as np
import pytest

from bert.data.manifest import MANIFEST_FILE
from bert.data.shards import read_shard
from bert.data.vocab import Vocab, load_vocab
from bert.prep.shard_writer import write_shard
from bert.prep.verify import verify_dataset
from bert.system import load_descriptor
from bert.train import RunRequest, run
from tests.helpers.datasets import edit_unseen
from tests.helpers.faults import assert_log_aborted

ROW = 17  # the sample corrupted in every training shard, whichever the loader reads first


def _run(tmp_path, data, **run_changes) -> tuple[int, str]:
    system = load_descriptor("cpu_micro").variant(run_changes, name="micro")
    log = tmp_path / "result_0.txt"
    return run(RunRequest(system, 1, log, data)), log


def _corrupt_shards(data, key: str, change) -> None:
    """Sets `change(row values, sample length) -> new row values` on sample ROW of `key` in every training shard,
    unseen by the manifest."""
    def edit(f) -> None:
        length = int(f["input_mask"][ROW].sum())
        values = f[key][:]
        values[ROW] = change(values[ROW].copy(), length)
        f[key][...] = values
    edit_unseen(data, edit)


def _set(column: int, value: int):
    def change(row, length):
        row[column] = value
        return row
    return change


def _past_the_sequence(row, length):
    row[(row > 0).sum() - 1] = length + 1  # the last masked position, now past the sequence's end
    return row


CORRUPTIONS = {
    "token id past the vocabulary": ("input_ids", _set(3, 5000), "token id 5000 is outside the vocabulary of 4096 "
                                                                 "pieces"),
    "negative token id": ("input_ids", _set(3, -3), "token id -3 is outside the vocabulary of 4096 pieces"),
    "masked position past the sequence": ("masked_lm_positions", _past_the_sequence, r"masked position \d+ is outside "
                                                                                     r"its sequence of \d+ tokens"),
    "masked id past the vocabulary": ("masked_lm_ids", _set(0, 99999),
                                      "masked id 99999 is outside the vocabulary of 4096 pieces"),
    "segment id 2": ("segment_ids", _set(2, 2), "segment id 2 is not 0 or 1"),
    "next-sentence label 5": ("next_sentence_labels", lambda row, length: 5, "next_sentence_labels is 5, not 0 or 1"),
}


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_a_bad_sample_is_named_by_its_shard_and_row(tmp_path, fault_data, name):
    key, change, problem = CORRUPTIONS[name]
    _corrupt_shards(fault_data, key, change)
    code, log = _run(tmp_path, fault_data)
    assert code == 1
    metadata = assert_log_aborted(log, "ShardError: ")
    shard = re.escape(str(fault_data / "train"))
    assert re.search(rf"ShardError: {shard}/part-\d+-of-00004\.hdf5: sample {ROW}: {problem}; the data does not "
                     "fit the vocabulary and the descriptor: check it with `mlperf-bert data verify`",
                     metadata["reason"]), metadata["reason"]


def test_a_vocabulary_that_does_not_match_verified_data_stops_the_run_before_run_start(tmp_path, fault_data):
    assert verify_dataset(fault_data, show_progress=False).manifest is not None
    pieces = load_vocab(fault_data / "vocab.txt").pieces[:1000]
    Vocab(pieces).write(tmp_path / "small_vocab.txt")
    code, log = _run(tmp_path, fault_data, dataset={"dir": str(fault_data), "vocab_file": str(tmp_path /
                                                                                           "small_vocab.txt")})
    assert code == 1
    reason = assert_log_aborted(log, "the vocabulary does not match the data")["reason"]
    assert re.search(r"hdf5: holds token ids up to \d{4} \(proved by `mlperf-bert data verify`\), but "
                     rf"{re.escape(str(tmp_path / 'small_vocab.txt'))} has 1000 pieces", reason), reason
    assert "run_start" not in log.read_text()


def test_a_dataset_verify_found_unfit_stops_the_run_before_run_start(tmp_path, fault_data):
    evaluation = read_shard(fault_data / "eval.hdf5")
    write_shard(fault_data / "train" / "part-00003-of-00004.hdf5", evaluation, "fixed", 64, 10)  # all 256 leaked
    assert verify_dataset(fault_data, show_progress=False).problems
    code, log = _run(tmp_path, fault_data)
    assert code == 1
    reason = assert_log_aborted(log, "ShardError: ")["reason"]
    assert re.fullmatch(r"ShardError: .*manifest\.json: `data verify` found this dataset unfit: .*eval\.hdf5: 256 of "
                        r"its 256 eval samples \(100\.0%\) are also in train/ .*; `mlperf-bert data verify .*` shows "
                        r"every problem", reason), reason
    assert "run_start" not in log.read_text()


def test_what_verify_proved_is_recorded_in_the_manifest(fault_data):
    verify_dataset(fault_data, show_progress=False)
    entries = {e["path"]: e for e in json.loads((fault_data / MANIFEST_FILE).read_text())["files"]}
    shard = read_shard(fault_data / "train" / "part-00002-of-00004.hdf5")
    entry = entries["train/part-00002-of-00004.hdf5"]
    listed = shard.masked_positions > 0
    assert entry["max_token_id"] == max(shard.tokens.max(), shard.masked_ids[listed].max())
    assert entry["max_length"] == shard.lengths.max() and entry["max_predictions"] == listed.sum(1).max()
    assert entries["vocab.txt"]["max_token_id"] is None


@pytest.mark.parametrize("key, dtype, message", [
    ("input_ids", np.float64, "input_ids has dtype float64; MLPerf shards hold integers"),
    ("next_sentence_labels", "pair", r"next_sentence_labels \(2,\) per sample must be one label"),
])
def test_wrong_dtypes_and_shapes_stop_the_run_before_run_start(tmp_path, fault_data, key, dtype, message):
    shard = fault_data / "train" / "part-00001-of-00004.hdf5"
    with h5py.File(shard, "r+") as f:
        values = f[key][:]
        del f[key]
        f.create_dataset(key, data=np.stack([values, values], 1) if dtype == "pair" else values.astype(dtype))
    code, log = _run(tmp_path, fault_data)
    assert code == 1
    assert_log_aborted(log, f"ShardError: {shard}: ")
    assert re.search(message, log.read_text().splitlines()[-1]) and "run_start" not in log.read_text()
