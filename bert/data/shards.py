"""MLPerf BERT HDF5 shards, in both published forms, read into (and written from) one in-memory type.

Fixed-length form: input_ids [N, L], input_mask [N, L], segment_ids [N, L], masked_lm_positions [N, P],
masked_lm_ids [N, P], next_sentence_labels [N]; zero padding, a masked position of 0 ends the list.
Variable-length form: the same keys without input_mask, each row an HDF5 variable-length array cut to its
real length (masked lists cut to their real count).

`Samples` keeps the tokens of all sequences concatenated with offsets, so short sequences cost no padding in
memory and both forms read to identical arrays.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

FIXED_KEYS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
              "next_sentence_labels")
VARLEN_KEYS = ("input_ids", "segment_ids", "masked_lm_positions", "masked_lm_ids", "next_sentence_labels")


class ShardError(ValueError):
    """A shard that cannot be used; the message names the file and what is wrong."""


@dataclass
class Samples:
    tokens: np.ndarray  # [total] int32: every sequence's real tokens, concatenated
    segments: np.ndarray  # [total] int8
    offsets: np.ndarray  # [N+1] int64: sequence i is tokens[offsets[i]:offsets[i+1]]
    masked_positions: np.ndarray  # [N, P] int32, 0-padded
    masked_ids: np.ndarray  # [N, P] int32, 0-padded
    nsp_labels: np.ndarray  # [N] int8 (1 = random next sentence)

    def __len__(self) -> int:
        return len(self.nsp_labels)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def max_predictions(self) -> int:
        return self.masked_positions.shape[1]

    def take(self, indices: np.ndarray) -> Samples:
        """The samples at `indices`, in that order."""
        indices = np.asarray(indices, dtype=np.int64)
        lengths = self.lengths[indices]
        offsets = np.zeros(len(indices) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        gather = _ranges(self.offsets[indices], lengths)
        return Samples(self.tokens[gather], self.segments[gather], offsets,
                       self.masked_positions[indices], self.masked_ids[indices], self.nsp_labels[indices])

    @staticmethod
    def concat(parts: list[Samples]) -> Samples:
        width = max(p.max_predictions for p in parts)
        offsets = [np.zeros(1, dtype=np.int64)]
        base = 0
        for p in parts:
            offsets.append(p.offsets[1:] + base)
            base += p.offsets[-1]
        return Samples(
            np.concatenate([p.tokens for p in parts]), np.concatenate([p.segments for p in parts]),
            np.concatenate(offsets),
            np.concatenate([_widen(p.masked_positions, width) for p in parts]),
            np.concatenate([_widen(p.masked_ids, width) for p in parts]),
            np.concatenate([p.nsp_labels for p in parts]),
        )

    def padded(self, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(input_ids, input_mask, segment_ids), each [N, length], zero-padded."""
        n = len(self)
        positions = np.arange(length)[None, :]
        real = positions < self.lengths[:, None]
        gather = np.where(real, self.offsets[:-1, None] + positions, 0)
        ids = np.where(real, self.tokens[gather] if len(self.tokens) else 0, 0).astype(np.int32)
        seg = np.where(real, self.segments[gather] if len(self.segments) else 0, 0).astype(np.int8)
        return ids.reshape(n, length), real.astype(np.int8), seg.reshape(n, length)


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s+n) for each (s, n), without a Python loop."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    run_starts = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return run_starts + np.arange(total)


def _widen(a: np.ndarray, width: int) -> np.ndarray:
    if a.shape[1] == width:
        return a
    return np.pad(a, ((0, 0), (0, width - a.shape[1])))


def _check_keys(path: Path, f: h5py.File, keys: tuple[str, ...], form: str) -> None:
    missing = [k for k in keys if k not in f]
    if missing:
        raise ShardError(f"{path}: missing key(s) {', '.join(missing)} for the {form} form; "
                         f"a shard needs {', '.join(keys)}")


def _is_varlen(dataset: h5py.Dataset) -> bool:
    return h5py.check_vlen_dtype(dataset.dtype) is not None


def read_shard(path: str | os.PathLike) -> Samples:
    """Reads one shard of either form; raises ShardError naming the file and the problem."""
    path = Path(path)
    if not path.is_file():
        raise ShardError(f"{path}: no such shard file")
    try:
        with h5py.File(path, "r") as f:
            if "input_ids" in f and _is_varlen(f["input_ids"]):
                _check_keys(path, f, VARLEN_KEYS, "variable-length")
                return _read_varlen(path, f)
            _check_keys(path, f, FIXED_KEYS, "fixed-length")
            return _read_fixed(path, f)
    except OSError as e:
        raise ShardError(f"{path}: not a readable HDF5 file ({e})") from e


def _read_fixed(path: Path, f: h5py.File) -> Samples:
    ids, mask, seg = f["input_ids"][:], f["input_mask"][:], f["segment_ids"][:]
    positions, mlm_ids, nsp = f["masked_lm_positions"][:], f["masked_lm_ids"][:], f["next_sentence_labels"][:]
    n = len(ids)
    for key, a in (("input_mask", mask), ("segment_ids", seg), ("masked_lm_positions", positions),
                   ("masked_lm_ids", mlm_ids), ("next_sentence_labels", nsp)):
        if len(a) != n:
            raise ShardError(f"{path}: {key} has {len(a)} rows but input_ids has {n}")
    if ids.shape != mask.shape or ids.shape != seg.shape or positions.shape != mlm_ids.shape:
        raise ShardError(f"{path}: shapes disagree: input_ids {ids.shape}, input_mask {mask.shape}, "
                         f"segment_ids {seg.shape}, masked_lm_positions {positions.shape}, "
                         f"masked_lm_ids {mlm_ids.shape}")
    # A masked position of 0 ends the list: whatever follows it is padding.
    listed = np.cumprod(positions > 0, axis=1).astype(bool)
    positions, mlm_ids = np.where(listed, positions, 0), np.where(listed, mlm_ids, 0)
    real = mask.astype(bool)
    lengths = real.sum(1)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    # input_mask marks a prefix of each row, so boolean selection keeps the per-row token order.
    return Samples(ids[real].astype(np.int32), seg[real].astype(np.int8), offsets,
                   positions.astype(np.int32), mlm_ids.astype(np.int32), nsp.reshape(n).astype(np.int8))


def _read_varlen(path: Path, f: h5py.File) -> Samples:
    ids, seg = f["input_ids"][:], f["segment_ids"][:]
    positions, mlm_ids, nsp = f["masked_lm_positions"][:], f["masked_lm_ids"][:], f["next_sentence_labels"][:]
    n = len(ids)
    lengths = np.fromiter((len(r) for r in ids), dtype=np.int64, count=n)
    if len(seg) != n or any(len(a) != len(b) for a, b in zip(ids, seg)):
        raise ShardError(f"{path}: segment_ids rows do not match input_ids rows")
    counts = np.fromiter((len(r) for r in positions), dtype=np.int64, count=n)
    width = int(counts.max()) if n else 0
    pos = np.zeros((n, width), dtype=np.int32)
    mid = np.zeros((n, width), dtype=np.int32)
    for i in range(n):
        if len(mlm_ids[i]) != counts[i]:
            raise ShardError(f"{path}: row {i}: {counts[i]} masked positions but {len(mlm_ids[i])} masked ids")
        pos[i, : counts[i]] = positions[i]
        mid[i, : counts[i]] = mlm_ids[i]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    tokens = np.concatenate(list(ids)).astype(np.int32) if n else np.zeros(0, np.int32)
    segments = np.concatenate(list(seg)).astype(np.int8) if n else np.zeros(0, np.int8)
    return Samples(tokens, segments, offsets, pos, mid, np.asarray(nsp).reshape(n).astype(np.int8))


def write_shard(path: str | os.PathLike, samples: Samples, form: str, max_seq_length: int,
                max_predictions: int) -> None:
    """Writes `samples` in the fixed or variable-length form; the file appears under its name only when
    complete (written to a temporary name, then renamed)."""
    path = Path(path)
    if form not in ("fixed", "varlen"):
        raise ValueError(f"unknown shard form {form!r}; use 'fixed' or 'varlen'")
    if len(samples) and samples.lengths.max() > max_seq_length:
        raise ValueError(f"{path}: a sample has {samples.lengths.max()} tokens > max_seq_length {max_seq_length}")
    positions = _widen(samples.masked_positions, max_predictions)
    mlm_ids = _widen(samples.masked_ids, max_predictions)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with h5py.File(tmp, "w") as f:
            if form == "fixed":
                _write_fixed(f, samples, positions, mlm_ids, max_seq_length)
            else:
                _write_varlen(f, samples)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _write_fixed(f: h5py.File, s: Samples, positions: np.ndarray, mlm_ids: np.ndarray, length: int) -> None:
    ids, mask, seg = s.padded(length)
    opts = {"compression": "gzip", "compression_opts": 1}
    f.create_dataset("input_ids", data=ids, dtype="i4", **opts)
    f.create_dataset("input_mask", data=mask, dtype="i1", **opts)
    f.create_dataset("segment_ids", data=seg, dtype="i1", **opts)
    f.create_dataset("masked_lm_positions", data=positions, dtype="i4", **opts)
    f.create_dataset("masked_lm_ids", data=mlm_ids, dtype="i4", **opts)
    f.create_dataset("next_sentence_labels", data=s.nsp_labels, dtype="i1")


def _write_varlen(f: h5py.File, s: Samples) -> None:
    counts = (s.masked_positions > 0).sum(1)
    rows = [(s.offsets[i], s.offsets[i + 1]) for i in range(len(s))]
    for key, dtype, values in (
        ("input_ids", np.int16 if s.tokens.max(initial=0) < 2**15 else np.int32,
         [s.tokens[a:b] for a, b in rows]),
        ("segment_ids", np.int8, [s.segments[a:b] for a, b in rows]),
        ("masked_lm_positions", np.int16, [s.masked_positions[i, : counts[i]] for i in range(len(s))]),
        ("masked_lm_ids", np.int16 if s.masked_ids.max(initial=0) < 2**15 else np.int32,
         [s.masked_ids[i, : counts[i]] for i in range(len(s))]),
    ):
        column = np.empty(len(s), dtype=object)
        column[:] = [v.astype(dtype) for v in values]
        f.create_dataset(key, data=column, dtype=h5py.vlen_dtype(dtype))
    f.create_dataset("next_sentence_labels", data=s.nsp_labels, dtype="i1")
