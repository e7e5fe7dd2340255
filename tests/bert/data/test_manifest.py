"""The manifest of a verified dataset (bert.data.manifest): training's start-up check refuses a directory without
one, one written without the checks or with problems, one whose files changed since, and an eval file or a
vocabulary that `data verify` did not check; each with one line naming the file and the command that fixes it."""

import json
import os
import shutil
import time

import numpy as np
import pytest

from bert.data.dataset import check_dataset, dataset_files
from bert.data.manifest import MANIFEST_FILE
from bert.data.shards import ShardError, read_shard
from bert.data.vocab import Vocab, load_vocab
from bert.prep.shard_writer import write_shard
from bert.prep.verify import verify_dataset
from bert.system import load_descriptor
from tests.helpers.datasets import copy_dataset

SHARD = "train/part-00001-of-00004.hdf5"


@pytest.fixture
def dataset(small_dataset, tmp_path):
    return copy_dataset(small_dataset, tmp_path / "data")


def _check(dataset, tmp_path):
    needs = load_descriptor("cpu_micro").dataset_needs(dataset)
    check_dataset(dataset_files(needs), needs)


def test_training_start_up_checks_the_manifest(dataset, tmp_path):
    _check(dataset, tmp_path)  # the synthetic corpus comes verified
    (dataset / MANIFEST_FILE).unlink()
    with pytest.raises(ShardError, match=r"data: no manifest\.json: the dataset was never checked \(duplicates, "
                                         r"eval samples in training, the vocabulary\); run `mlperf-bert data verify "):
        _check(dataset, tmp_path)
    verify_dataset(dataset, show_progress=False)
    _check(dataset, tmp_path)
    os.utime(dataset / SHARD, ns=(time.time_ns(), time.time_ns() + 10**9))  # rewritten in place after verify
    with pytest.raises(ShardError, match=r"part-00001-of-00004\.hdf5: modified after .*manifest\.json was written"):
        _check(dataset, tmp_path)
    verify_dataset(dataset, show_progress=False)
    shutil.copy(dataset / SHARD, dataset / "train/part-extra.hdf5")
    with pytest.raises(ShardError, match=r"part-extra\.hdf5: not in .*manifest\.json; if the change is intended, "
                                         r"re-run `mlperf-bert data verify"):
        _check(dataset, tmp_path)
    (dataset / "train/part-extra.hdf5").unlink()
    shard = read_shard(dataset / SHARD)
    write_shard(dataset / SHARD, shard.take(np.arange(len(shard) - 5)), "fixed", 64, 10)
    with pytest.raises(ShardError, match=r"part-00001-of-00004\.hdf5: \d+ bytes, the manifest says \d+"):
        _check(dataset, tmp_path)
    (dataset / SHARD).unlink()
    with pytest.raises(ShardError, match=r"part-00001-of-00004\.hdf5: listed in .*manifest\.json but missing"):
        _check(dataset, tmp_path)


def test_a_changed_sample_count_is_caught_without_hashing(dataset, tmp_path):
    verify_dataset(dataset, show_progress=False)
    manifest = json.loads((dataset / MANIFEST_FILE).read_text())
    manifest["files"][0]["samples"] += 1
    (dataset / MANIFEST_FILE).write_text(json.dumps(manifest))
    with pytest.raises(ShardError, match=r"eval\.hdf5: 256 samples, the manifest says 257"):
        _check(dataset, tmp_path)


@pytest.mark.parametrize("change, message", [
    (lambda m: m.pop("checks"), r"manifest\.json: written without the samples, duplicates, eval_in_train, eval_pick, "
                                r"vocabulary check\(s\) \(an older `data verify`\); run `mlperf-bert data verify "),
    (lambda m: m["problems"].extend(["eval.hdf5: 64 of its 256 eval samples (25.0%) are also in train/", "other"]),
     r"manifest\.json: `data verify` found this dataset unfit: eval\.hdf5: 64 of its 256 eval samples \(25\.0%\) are "
     r"also in train/ \(and 1 more\); `mlperf-bert data verify .*data` shows every problem$"),
])
def test_training_refuses_a_manifest_without_the_checks_or_with_problems(dataset, tmp_path, change, message):
    manifest = json.loads((dataset / MANIFEST_FILE).read_text())
    change(manifest)
    (dataset / MANIFEST_FILE).write_text(json.dumps(manifest))
    with pytest.raises(ShardError, match=message):
        _check(dataset, tmp_path)


def test_training_needs_its_eval_file_and_vocabulary_checked(dataset, tmp_path):
    shutil.copy(dataset / "eval.hdf5", tmp_path / "eval_copy.hdf5")
    system = load_descriptor("cpu_micro").variant({"dataset": {"dir": str(dataset), "eval_file": "../eval_copy.hdf5"}},
                                              name="other_eval")
    with pytest.raises(ShardError, match=r"eval_copy\.hdf5: `data verify` did not check it as the eval set \(against "
                                         r"the training shards\); run `mlperf-bert data verify .*data --eval "):
        check_dataset(dataset_files(system.dataset_needs()), system.dataset_needs())
    shutil.copy(dataset / "vocab.txt", tmp_path / "vocab.txt")
    verify_dataset(dataset, vocab_path=tmp_path / "vocab.txt", show_progress=False)
    _check(dataset, tmp_path)  # the same vocabulary, elsewhere
    pieces = load_vocab(tmp_path / "vocab.txt").pieces
    Vocab((*pieces[:-1], "zzzz")).write(tmp_path / "vocab.txt")
    verify_dataset(dataset, vocab_path=tmp_path / "vocab.txt", show_progress=False)
    with pytest.raises(ShardError, match=r"data/vocab\.txt: not the vocabulary `data verify` checked the token ids "
                                         r"against; run `mlperf-bert data verify .*data --vocab .*data/vocab\.txt`"):
        _check(dataset, tmp_path)
