"""Writing shards (bert.prep.shard_writer): a shard appears whole or not at all, and holds the samples however
they were appended."""

import numpy as np
import pytest

from bert.data.shards import read_shard
from bert.prep.shard_writer import ShardWriter, write_shard
from tests.helpers.samples import make_samples


def test_write_is_atomic_on_failure(tmp_path):
    s = make_samples([12, 30, 7], predictions=5)
    with pytest.raises(ValueError, match="max_seq_length"):
        write_shard(tmp_path / "x.hdf5", s, "fixed", max_seq_length=8, max_predictions=5)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("form", ["fixed", "varlen"])
def test_samples_appended_in_blocks_read_back_as_one_write(tmp_path, form):
    s = make_samples([5, 30, 12, 9, 31, 2, 17], predictions=4, seed=3)
    write_shard(tmp_path / "once.hdf5", s, form, max_seq_length=32, max_predictions=4)
    with ShardWriter(tmp_path / "blocks.hdf5", form, 32, 4, s.id_bound) as writer:
        for rows in (np.arange(2), np.arange(2, 2), np.arange(2, 7)):
            writer.append(s.take(rows))
    read = read_shard(tmp_path / "blocks.hdf5")
    for field in ("tokens", "segments", "offsets", "masked_positions", "masked_ids", "nsp_labels"):
        assert np.array_equal(getattr(read, field), getattr(s, field)), field
    if form == "fixed":  # its chunks do not depend on the blocks; the varlen form's heap does
        assert (tmp_path / "blocks.hdf5").read_bytes() == (tmp_path / "once.hdf5").read_bytes()


def test_an_unknown_form_or_an_error_while_writing_leaves_nothing(tmp_path):
    with pytest.raises(ValueError, match="unknown shard form 'dense'; use 'fixed' or 'varlen'"):
        ShardWriter(tmp_path / "a.hdf5", "dense", 32, 4)
    with pytest.raises(RuntimeError, match="stopped"), ShardWriter(tmp_path / "b.hdf5", "fixed", 32, 4) as writer:
        writer.append(make_samples([5, 6], predictions=4))
        raise RuntimeError("stopped")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("lengths", [[7], [9, 9, 9]])
def test_a_varlen_block_of_one_sample_or_of_equal_rows_is_written(tmp_path, lengths):
    # Rows of one length once reached h5py as a 2-D object array, which the variable-length column refused.
    s = make_samples(lengths, predictions=3, seed=1)
    write_shard(tmp_path / "equal.hdf5", s, "varlen", max_seq_length=16, max_predictions=3)
    read = read_shard(tmp_path / "equal.hdf5")
    for field in ("tokens", "segments", "masked_positions", "masked_ids", "nsp_labels"):
        assert np.array_equal(getattr(read, field), getattr(s, field)), field
