"""The fixed form's columns, written a whole HDF5 chunk at a time and filtered here instead of by HDF5.

`create_fixed_column(file, key, dtype, width)` makes an empty column (chunks of about 256 KiB, HDF5's byte-shuffle
and gzip filters); `ChunkedColumn(dataset)` appends rows in blocks of any size, storing each whole chunk as
`shuffle_deflate` compresses it (`write_direct_chunk`), and pads the last chunk with zeros on `close`, as HDF5
stores an edge chunk. Any HDF5 reader reads the file as one HDF5 would have written. Why the chunks are
compressed here: docs/data.md, "How `prepare` replays the reference".
"""

from __future__ import annotations

import zlib

import h5py
import numpy as np

GZIP_LEVEL = 1  # the level recorded in the filter; zlib's run-length search does not depend on it


def create_fixed_column(file: h5py.File, key: str, dtype: type, width: int) -> h5py.Dataset:
    """An empty column of rows of `width` values (a scalar per sample for width 0), chunked by about 256 KiB
    and filtered by byte shuffle and gzip."""
    shape = (0, width) if width else (0,)
    chunk_rows = _chunk_rows(np.dtype(dtype).itemsize * (width or 1))
    return file.create_dataset(key, shape=shape, maxshape=(None, *shape[1:]), dtype=dtype,
                               chunks=(chunk_rows, *shape[1:]), compression="gzip", compression_opts=GZIP_LEVEL,
                               shuffle=True, track_times=False)


def _chunk_rows(row_bytes: int) -> int:
    """Rows per HDF5 chunk: about 256 KiB, a power of two."""
    return 1 << max(0, min(12, (2**18 // row_bytes).bit_length() - 1))


def shuffle_deflate(chunk: np.ndarray) -> bytes:
    """A chunk as HDF5's shuffle and deflate filters store it: all first bytes of its values, then all second
    bytes, ..., then a zlib stream of that."""
    values = np.ascontiguousarray(chunk)
    size = values.dtype.itemsize
    shuffled = values.view(np.uint8).reshape(-1, size).T.tobytes() if size > 1 else values.tobytes()
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 15, 9, zlib.Z_RLE)
    return compressor.compress(shuffled) + compressor.flush()


class ChunkedColumn:
    """Appends rows to a column made by `create_fixed_column`, whole chunks at a time."""

    def __init__(self, dataset: h5py.Dataset):
        self.dataset = dataset
        self.chunk_rows = dataset.chunks[0]
        self.written = 0  # rows in whole chunks already stored
        self.pending = np.zeros((0, *dataset.shape[1:]), dtype=dataset.dtype)

    def append(self, rows: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=self.dataset.dtype)
        if len(self.pending):
            rows = np.concatenate([self.pending, rows])
        whole = len(rows) - len(rows) % self.chunk_rows
        self._store(rows[:whole], whole)
        self.pending = rows[whole:].copy()

    def close(self) -> None:
        """Stores the rows short of a whole chunk, in a chunk padded with zeros."""
        count = len(self.pending)
        if count:
            padded = np.zeros((self.chunk_rows, *self.pending.shape[1:]), dtype=self.pending.dtype)
            padded[:count] = self.pending
            self._store(padded, count)
            self.pending = self.pending[:0]

    def _store(self, chunks: np.ndarray, rows: int) -> None:
        """Stores whole chunks; the column grows by `rows` (fewer than the chunks hold for the last one)."""
        if not len(chunks):
            return
        first = self.written
        self.written += rows
        self.dataset.resize(self.written, axis=0)
        origin = (0,) * (chunks.ndim - 1)
        for start in range(0, len(chunks), self.chunk_rows):
            data = shuffle_deflate(chunks[start:start + self.chunk_rows])
            self.dataset.id.write_direct_chunk((first + start, *origin), data)
