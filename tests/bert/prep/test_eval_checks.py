"""The eval file against the training shards (a leak fails `data verify` and stops training at start-up), and
against the pick of the reference's pick_eval_samples.py from its source."""

import numpy as np
import pytest

from bert.data.dataset import check_dataset, dataset_files
from bert.data.shards import Samples, ShardError, read_shard
from bert.prep.shard_writer import write_shard
from bert.prep.verify import verify_dataset
from bert.system import load_descriptor
from tests.helpers.datasets import copy_dataset

SHARD = "train/part-00002-of-00004.hdf5"


@pytest.fixture
def dataset(small_dataset, tmp_path):
    return copy_dataset(small_dataset, tmp_path / "data")


def test_eval_samples_in_training_fail_verify_and_stop_training_at_start_up(dataset):
    evaluation, shard = read_shard(dataset / "eval.hdf5"), read_shard(dataset / SHARD)
    leaked = Samples.concat([evaluation.take(np.arange(64)), shard.take(np.arange(64, len(shard)))])
    write_shard(dataset / SHARD, leaked, "fixed", 64, 10)
    report = verify_dataset(dataset, show_progress=False)
    problem = (f"{dataset / 'eval.hdf5'}: 64 of its 256 eval samples (25.0%) are also in train/ (fixed form); sample 0 "
               f"is also in {dataset / SHARD}: accuracy on them would be measured on training data; make the eval set "
               "from text kept out of training (`mlperf-bert data eval-set`)")
    assert report.problems == [problem]
    needs = load_descriptor("cpu_micro").dataset_needs(dataset)
    with pytest.raises(ShardError) as refused:
        check_dataset(dataset_files(needs), needs)
    assert str(refused.value) == (f"{dataset / 'manifest.json'}: `data verify` found this dataset unfit: {problem}; "
                                  f"`mlperf-bert data verify {dataset}` shows every problem")


def test_the_eval_file_must_be_the_reference_pick_of_its_source(dataset, tmp_path):
    evaluation, other = read_shard(dataset / "eval.hdf5"), read_shard(dataset / SHARD).take(np.arange(256))
    # pick_eval_samples takes sample int(i * 512 / 256) = 2i of 512: the eval samples at the even places.
    interleaved = np.argsort(np.concatenate([np.arange(256) * 2, np.arange(256) * 2 + 1]), kind="stable")
    write_shard(tmp_path / "source.hdf5", Samples.concat([evaluation, other]).take(interleaved), "fixed", 64, 10)
    report = verify_dataset(dataset, eval_source=tmp_path / "source.hdf5", show_progress=False)
    assert report.problems == [] and report.checks["eval_pick"]["eval.hdf5"]["reference_pick"] is True
    assert (f"eval.hdf5: the 256 samples pick_eval_samples.py picks from the 512 of {tmp_path / 'source.hdf5'} (the "
            "reference's eval set has 10,000)") in report.check_lines
    shifted = np.argsort(np.concatenate([np.arange(256) * 2 + 1, np.arange(256) * 2]), kind="stable")
    write_shard(tmp_path / "source.hdf5", Samples.concat([evaluation, other]).take(shifted), "fixed", 64, 10)
    report = verify_dataset(dataset, eval_source=tmp_path / "source.hdf5", show_progress=False)
    assert report.problems == [
        f"{dataset / 'eval.hdf5'}: 256 of its 256 samples are not those pick_eval_samples.py picks from "
        f"{tmp_path / 'source.hdf5'} (the first: sample 0); make it with `mlperf-bert data eval-set --input "
        f"{tmp_path / 'source.hdf5'} --out {dataset / 'eval.hdf5'} --samples 256 --format fixed --overwrite`"]
