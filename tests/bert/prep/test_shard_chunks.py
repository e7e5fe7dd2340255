import zlib

import h5py
import numpy as np
import pytest

from bert.prep.shard_chunks import ChunkedColumn, create_fixed_column, shuffle_deflate


def _write(path, blocks, dtype, width):
    with h5py.File(path, "w") as f:
        column = ChunkedColumn(create_fixed_column(f, "values", dtype, width))
        for block in blocks:
            column.append(block)
        column.close()


@pytest.mark.parametrize("dtype, width", [(np.int32, 512), (np.int8, 76), (np.int8, 0)])
def test_rows_appended_in_any_blocks_read_back_through_hdf5_and_give_the_same_file(tmp_path, dtype, width):
    rng = np.random.default_rng(0)
    shape = (1, width) if width else (1,)
    rows = rng.integers(-100, 30000 if dtype == np.int32 else 100, (1000 * 2 + 13, *shape[1:])).astype(dtype)
    cuts = [0, 1, 1, 130, 700, 1700, len(rows)]  # an empty block, a block in one chunk, blocks across chunks
    _write(tmp_path / "blocks.hdf5", [rows[a:b] for a, b in zip(cuts, cuts[1:])], dtype, width)
    _write(tmp_path / "once.hdf5", [rows], dtype, width)
    with h5py.File(tmp_path / "blocks.hdf5") as f:
        values = f["values"]
        assert values.shape == rows.shape and values.compression == "gzip" and values.shuffle
        assert np.array_equal(values[:], rows)
    assert (tmp_path / "blocks.hdf5").read_bytes() == (tmp_path / "once.hdf5").read_bytes()


def test_a_chunk_is_stored_as_the_shuffle_and_deflate_filters_define_it(tmp_path):
    chunk = np.arange(6, dtype=np.int32).reshape(2, 3) * 0x01020304
    shuffled = bytes(chunk.view(np.uint8).reshape(-1, 4)[:, plane].tobytes()[i] for plane in range(4)
                     for i in range(chunk.size))
    assert zlib.decompress(shuffle_deflate(chunk)) == shuffled


def test_an_edge_chunk_is_padded_with_the_fill_value(tmp_path):
    rows = np.full((5, 8), 7, dtype=np.int32)
    _write(tmp_path / "edge.hdf5", [rows], np.int32, 8)
    with h5py.File(tmp_path / "edge.hdf5") as f:
        values = f["values"]
        filter_mask, stored = values.id.read_direct_chunk((0, 0))
        decoded = np.frombuffer(zlib.decompress(stored), np.uint8).reshape(4, -1).T.copy().view(np.int32)
        assert filter_mask == 0 and values.chunks[0] > 5
        assert np.array_equal(decoded.reshape(values.chunks)[:5], rows) and not decoded.reshape(values.chunks)[5:].any()
