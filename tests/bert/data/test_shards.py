import h5py
import numpy as np
import pytest

from bert.data.shards import Samples, ShardError, read_shard
from bert.prep.shard_writer import write_shard


def _samples(n: int = 20, seed: int = 0) -> Samples:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(5, 33, n)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    tokens = rng.integers(5, 1000, offsets[-1]).astype(np.int32)
    segments = np.concatenate([(np.arange(k) >= k // 2).astype(np.int8) for k in lengths])
    positions = np.zeros((n, 5), np.int32)
    ids = np.zeros((n, 5), np.int32)
    for i, k in enumerate(lengths):
        count = rng.integers(1, 6)
        positions[i, :count] = np.sort(rng.choice(np.arange(1, k), count, replace=False))
        ids[i, :count] = rng.integers(5, 1000, count)
    return Samples(tokens, segments, offsets, positions, ids, rng.integers(0, 2, n).astype(np.int8))


def _equal(a: Samples, b: Samples) -> None:
    for field in ("tokens", "segments", "offsets", "masked_positions", "masked_ids", "nsp_labels"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field


def test_fixed_and_varlen_forms_read_to_identical_samples(tmp_path):
    s = _samples()
    write_shard(tmp_path / "fixed.hdf5", s, "fixed", max_seq_length=32, max_predictions=5)
    write_shard(tmp_path / "varlen.hdf5", s, "varlen", max_seq_length=32, max_predictions=5)
    fixed, varlen = read_shard(tmp_path / "fixed.hdf5"), read_shard(tmp_path / "varlen.hdf5")
    _equal(fixed, s)
    _equal(varlen, s)
    with h5py.File(tmp_path / "fixed.hdf5") as f:
        assert f["input_ids"].shape == (20, 32) and f["masked_lm_positions"].shape == (20, 5)
    with h5py.File(tmp_path / "varlen.hdf5") as f:
        assert "input_mask" not in f and h5py.check_vlen_dtype(f["input_ids"].dtype) is not None


def test_fixed_form_ignores_positions_after_the_first_zero(tmp_path):
    s = _samples(3)
    write_shard(tmp_path / "a.hdf5", s, "fixed", 32, 5)
    with h5py.File(tmp_path / "a.hdf5", "r+") as f:
        f["masked_lm_positions"][0, -1] = 3  # garbage after a 0 terminator
        f["masked_lm_positions"][0, 1:4] = 0
    read = read_shard(tmp_path / "a.hdf5")
    assert (read.masked_positions[0, 1:] == 0).all() and (read.masked_ids[0, 1:] == 0).all()


def test_take_and_concat_keep_samples_intact():
    s = _samples()
    picked = s.take(np.array([3, 0, 7]))
    assert np.array_equal(picked.tokens[: picked.lengths[0]], s.tokens[s.offsets[3]: s.offsets[4]])
    joined = Samples.concat([s.take(np.arange(10)), s.take(np.arange(10, 20))])
    _equal(joined, s)


def test_missing_key_names_the_file_and_the_key(tmp_path):
    path = tmp_path / "bad.hdf5"
    write_shard(path, _samples(), "fixed", 32, 5)
    with h5py.File(path, "r+") as f:
        del f["masked_lm_ids"]
    with pytest.raises(ShardError, match=r"bad\.hdf5: missing key\(s\) masked_lm_ids"):
        read_shard(path)


def test_corrupt_and_missing_files_are_named(tmp_path):
    path = tmp_path / "corrupt.hdf5"
    path.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 100)
    with pytest.raises(ShardError, match=r"corrupt\.hdf5: not a readable HDF5 file"):
        read_shard(path)
    with pytest.raises(ShardError, match=r"absent\.hdf5: no such shard file"):
        read_shard(tmp_path / "absent.hdf5")
