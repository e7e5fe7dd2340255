"""`mlperf-bert data verify` of a dataset (bert.prep.verify): a good one passes and gets its manifest and summary, a
shard's problem becomes the manifest's failed verdict, and a FIFO or a device among the shards is one line, never a
hang. Each shard's own checks: tests/bert/prep/test_shard_check.py."""

import hashlib
import json
import os
import subprocess
import sys

import h5py
import pytest

from bert.data.manifest import MANIFEST_FILE
from bert.data.shards import read_shard
from bert.prep.verify import summary_lines, verify_dataset
from tests.helpers.datasets import copy_dataset

SHARD = "train/part-00001-of-00004.hdf5"


@pytest.fixture
def dataset(small_dataset, tmp_path):
    return copy_dataset(small_dataset, tmp_path / "data")


def test_a_good_dataset_passes_and_gets_a_manifest(dataset):
    report = verify_dataset(dataset, workers=2, show_progress=False)
    assert report.problems == [] and report.manifest == dataset / MANIFEST_FILE
    in_parallel = report.manifest.read_text()
    assert verify_dataset(dataset, show_progress=False).manifest.read_text() == in_parallel
    entries = {e["path"]: e for e in json.loads(report.manifest.read_text())["files"]}
    assert set(entries) == {f"train/part-0000{i}-of-00004.hdf5" for i in range(4)} | {"eval.hdf5", "vocab.txt"}
    shard = entries[SHARD]
    assert shard["samples"] == len(read_shard(dataset / SHARD)) and shard["form"] == "fixed"
    assert shard["sha256"] == hashlib.sha256((dataset / SHARD).read_bytes()).hexdigest()
    assert shard["size"] == (dataset / SHARD).stat().st_size and entries["vocab.txt"]["samples"] is None
    text = "\n".join(summary_lines(report))
    assert "4 training shard(s), 2,048 samples (fixed)" in text and "masked: 1" in text and "% random" in text
    assert "eval: 256 samples (eval.hdf5), not counted above" in text  # the eval set is not training data
    assert "   57-64 " in text  # the length histogram reaches the longest sample


def test_a_shard_s_problem_is_the_manifest_s_failed_verdict(dataset):
    with h5py.File(dataset / SHARD, "r+") as f:
        labels = f["next_sentence_labels"][:]
        labels[7] = 2
        f["next_sentence_labels"][...] = labels
    report = verify_dataset(dataset, show_progress=False)
    recorded = json.loads(report.manifest.read_text())  # the verdict, which training refuses
    assert recorded["verdict"] == "failed" and recorded["problems"] == report.problems == [
        f"{dataset / SHARD}: sample 7: next_sentence_labels is not 0 or 1"]


@pytest.mark.parametrize("plant, kind", [(os.mkfifo, "a named pipe (FIFO)"),
                                         (lambda path: path.symlink_to("/dev/zero"), "a device")])
def test_a_fifo_or_a_link_to_a_device_among_the_shards_is_one_line_not_a_hang(dataset, plant, kind):
    """Opening a FIFO waits for a writer forever and /dev/zero never ends: verify hung on both (in the hash of
    the shard it could not read). Each is refused before anything is read, and the manifest is left as it was."""
    planted = dataset / "train" / "zz.hdf5"
    plant(planted)
    manifest = (dataset / MANIFEST_FILE).read_bytes()
    proc = subprocess.run([sys.executable, "-m", "bert.cli", "data", "verify", str(dataset), "--workers", "1",
                           "--quiet"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines() == [f"Error: {planted}: is {kind}, not a shard file; a dataset holds plain HDF5 "
                                        "files only"]
    assert (dataset / MANIFEST_FILE).read_bytes() == manifest
