"""Writes MLPerf BERT HDF5 shards (bert.data.shards' two forms) from `Samples`, offline: `mlperf-bert data`'s
prepare, import, reshard and synthetic corpus.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import h5py
import numpy as np

from bert.data.shards import FIXED_KEYS, FORMS, READ_DTYPES, Samples, exact, widen
from bert.ownership import temporary_path
from bert.prep.shard_chunks import ChunkedColumn, create_fixed_column


class ShardWriteError(OSError):
    """A shard that could not be written (a full disk, a quota, a file-size limit): names the file."""

    def __init__(self, path: Path, error: Exception):
        found = re.search(r"error message = '([^']*)'", str(error))  # HDF5's own words carry the system's
        reason = found[1] if found else (getattr(error, "strerror", None) or str(error).splitlines()[0])
        super().__init__(f"{path}: cannot be written ({reason}); nothing of it is kept: free space there, or write "
                         "the data elsewhere")


class ShardWriter:
    """Writes one shard, a block of samples at a time, in the fixed or variable-length form. The file appears
    under its name only when `close` succeeds (it is written to a temporary name, then renamed); used as a
    context manager, an exception leaves nothing behind. The same samples always give the same bytes."""

    def __init__(self, path: str | os.PathLike, form: str, max_seq_length: int, max_predictions: int,
                 vocab_size: int | None = None):
        if form not in FORMS:
            raise ValueError(f"unknown shard form {form!r}; use 'fixed' or 'varlen'")
        self.path, self.form = Path(path), form
        self.max_seq_length, self.max_predictions = max_seq_length, max_predictions
        self.rows = 0
        self._tmp = temporary_path(self.path)
        self._file = h5py.File(self._tmp, "w")
        self._id_type = np.int16 if vocab_size is not None and vocab_size <= 2**15 else np.int32
        self._chunked: dict[str, ChunkedColumn] = {}  # the fixed form's columns
        try:
            self._create_datasets()
        except BaseException:
            self.abort()
            raise

    def _create_datasets(self) -> None:
        for key, dtype, width in self._columns():
            if self.form == "fixed":
                self._chunked[key] = ChunkedColumn(create_fixed_column(self._file, key, dtype, width))
            else:
                self._file.create_dataset(key, shape=(0,), maxshape=(None,), chunks=(4096,), track_times=False,
                                          dtype=h5py.vlen_dtype(dtype) if width else dtype)

    def _columns(self) -> list[tuple[str, type, int]]:
        """(key, dtype, row width or 0 for a scalar per sample); varlen rows are cut to their length."""
        length, width = self.max_seq_length, self.max_predictions
        if self.form == "fixed":
            widths = {"input_ids": length, "input_mask": length, "segment_ids": length,
                      "masked_lm_positions": width, "masked_lm_ids": width, "next_sentence_labels": 0}
            return [(key, READ_DTYPES[key], widths[key]) for key in FIXED_KEYS]
        return [("input_ids", self._id_type, length), ("segment_ids", np.int8, length),
                ("masked_lm_positions", np.int16, width), ("masked_lm_ids", self._id_type, width),
                ("next_sentence_labels", np.int8, 0)]

    def append(self, samples: Samples) -> None:
        try:
            self._append(samples)
        except (OSError, RuntimeError) as e:  # h5py raises either when the disk is full
            raise ShardWriteError(self.path, e) from None

    def _append(self, samples: Samples) -> None:
        if len(samples) == 0:
            return
        if samples.lengths.max() > self.max_seq_length:
            raise ValueError(f"{self.path}: a sample has {samples.lengths.max()} tokens > max_seq_length "
                             f"{self.max_seq_length}")
        counts = (samples.masked_positions > 0).sum(1)
        if counts.max() > self.max_predictions:
            raise ValueError(f"{self.path}: a sample has {counts.max()} masked positions > max_predictions "
                             f"{self.max_predictions}")
        start, self.rows = self.rows, self.rows + len(samples)
        if self.form == "fixed":
            for key, values in self._fixed_rows(samples).items():
                self._chunked[key].append(values)
            return
        for key, values in self._varlen_rows(samples, counts).items():
            dataset = self._file[key]
            dataset.resize(self.rows, axis=0)
            dataset[start:self.rows] = values

    def _fixed_rows(self, s: Samples) -> dict[str, np.ndarray]:
        ids, mask, seg = s.padded(self.max_seq_length)
        return {"input_ids": ids, "input_mask": mask, "segment_ids": seg,
                "masked_lm_positions": widen(s.masked_positions, self.max_predictions),
                "masked_lm_ids": widen(s.masked_ids, self.max_predictions), "next_sentence_labels": s.nsp_labels}

    def _varlen_rows(self, s: Samples, counts: np.ndarray) -> dict[str, np.ndarray]:
        def rows(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
            lengths = np.diff(offsets)
            if (lengths == lengths[0]).all():  # h5py and numpy would stack equal rows into a 2-D object array
                return values.reshape(len(lengths), lengths[0])  # that the column refuses; this h5py splits
            column = np.empty(len(lengths), dtype=object)
            column[:] = np.split(values, offsets[1:-1])
            return column

        listed = np.arange(s.max_predictions)[None, :] < counts[:, None]
        mask_offsets = np.concatenate([[0], np.cumsum(counts)])
        return {"input_ids": rows(exact(self.path, "input_ids", s.tokens, self._id_type), s.offsets),
                "segment_ids": rows(s.segments, s.offsets),
                "masked_lm_positions": rows(exact(self.path, "masked_lm_positions", s.masked_positions[listed],
                                                  np.int16), mask_offsets),
                "masked_lm_ids": rows(exact(self.path, "masked_lm_ids", s.masked_ids[listed], self._id_type),
                                      mask_offsets),
                "next_sentence_labels": s.nsp_labels}

    def close(self) -> Path:
        try:
            for column in self._chunked.values():
                column.close()
            self._file.close()
        except (OSError, RuntimeError) as e:
            self.abort()
            raise ShardWriteError(self.path, e) from None
        except BaseException:
            self.abort()
            raise
        os.replace(self._tmp, self.path)
        return self.path

    def abort(self) -> None:
        try:
            self._file.close()
        except (OSError, RuntimeError):  # what it could not write (a full disk) goes with the file
            pass
        self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> ShardWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def write_shard(path: str | os.PathLike, samples: Samples, form: str, max_seq_length: int,
                max_predictions: int) -> None:
    """Writes `samples` as one shard (see ShardWriter)."""
    with ShardWriter(path, form, max_seq_length, max_predictions, samples.id_bound) as writer:
        writer.append(samples)
