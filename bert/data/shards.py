"""MLPerf BERT HDF5 shards, in both published forms, read into one in-memory type (written by
bert.prep.shard_writer).

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

from bert.regular_files import irregular_kind

FIXED_KEYS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
              "next_sentence_labels")
FORMS = ("fixed", "varlen")
VARLEN_KEYS = ("input_ids", "segment_ids", "masked_lm_positions", "masked_lm_ids", "next_sentence_labels")
# The dtype of each key once read (Samples), as the fixed form stores it: a stored value that does not fit is
# an error, never wrapped (a 64-bit id of 2**32 + 54 is not id 54).
READ_DTYPES = {"input_ids": np.int32, "input_mask": np.int8, "segment_ids": np.int8, "masked_lm_positions": np.int32,
               "masked_lm_ids": np.int32, "next_sentence_labels": np.int8}


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

    @property
    def id_bound(self) -> int:
        """One more than the largest token or masked id (the variable-length form stores 16-bit ids below 2**15)."""
        return max(int(self.tokens.max(initial=0)), int(self.masked_ids.max(initial=0))) + 1

    def take(self, indices: np.ndarray) -> Samples:
        """The samples at `indices`, in that order."""
        indices = np.asarray(indices, dtype=np.int64)
        lengths = self.lengths[indices]
        offsets = np.zeros(len(indices) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        gather = concat_ranges(self.offsets[indices], lengths)
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
            np.concatenate([widen(p.masked_positions, width) for p in parts]),
            np.concatenate([widen(p.masked_ids, width) for p in parts]),
            np.concatenate([p.nsp_labels for p in parts]),
        )

    def padded(self, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(input_ids, input_mask, segment_ids), each [N, length], zero-padded; no sample may be longer."""
        real = np.arange(length)[None, :] < self.lengths[:, None]
        ids = np.zeros(real.shape, dtype=np.int32)
        seg = np.zeros(real.shape, dtype=np.int8)
        # A boolean mask takes the values in row order: each row's tokens land at its first places.
        ids[real] = self.tokens
        seg[real] = self.segments
        return ids, real.view(np.int8), seg


def concat_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s+n) for each (s, n), without a Python loop."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    run_starts = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return run_starts + np.arange(total)


def widen(a: np.ndarray, width: int) -> np.ndarray:
    """`a` [N, w] zero-padded on the right to [N, width] (width >= w)."""
    if a.shape[1] == width:
        return a
    return np.pad(a, ((0, 0), (0, width - a.shape[1])))


def _check_keys(path: Path, f: h5py.File, keys: tuple[str, ...], form: str) -> None:
    missing = [k for k in keys if k not in f]
    if missing:
        raise ShardError(f"{path}: missing key(s) {', '.join(missing)} for the {form} form; "
                         f"a shard needs {', '.join(keys)}")


def exact(path: Path, key: str, values: np.ndarray, dtype: type) -> np.ndarray:
    """`values` as the integer `dtype`; raises ShardError naming the file and the key when one does not fit."""
    values = np.asarray(values)
    if values.size and values.dtype.kind in "iu" and not np.can_cast(values.dtype, dtype):
        info = np.iinfo(dtype)
        low, high = values.min(), values.max()
        if low < info.min or high > info.max:
            raise ShardError(f"{path}: {key} holds {high if high > info.max else low}, which {np.dtype(dtype).name} "
                             "cannot hold: not a value of an MLPerf BERT shard (a corrupt or wrapped value); "
                             "rewrite the shard from its source")
    return values.astype(dtype)


def shard_file(path: str | os.PathLike) -> Path:
    """`path` as a Path when it names a regular file (h5py opens it by name: a FIFO would block that open
    forever); ShardError saying what it is otherwise."""
    path = Path(path)
    kind = irregular_kind(path)
    if kind is not None:
        raise ShardError(f"{path}: is {kind}, not a shard file; a dataset holds plain HDF5 files only")
    if not path.is_file():
        raise ShardError(f"{path}: no such shard file")
    return path


def _is_varlen(dataset: h5py.Dataset) -> bool:
    return h5py.check_vlen_dtype(dataset.dtype) is not None


def read_arrays(path: str | os.PathLike, rows: slice = slice(None)) -> tuple[str, dict[str, np.ndarray]]:
    """(form, the `rows` of every required key, as stored); raises ShardError naming the file and the problem."""
    path = shard_file(path)
    try:
        with h5py.File(path, "r") as f:
            form = "varlen" if "input_ids" in f and _is_varlen(f["input_ids"]) else "fixed"
            keys = VARLEN_KEYS if form == "varlen" else FIXED_KEYS
            _check_keys(path, f, keys, "variable-length" if form == "varlen" else "fixed-length")
            return form, {k: f[k][rows] for k in keys}
    except OSError as e:
        raise ShardError(f"{path}: not a readable HDF5 file ({e})") from e


def samples_from_arrays(path: Path, form: str, arrays: dict[str, np.ndarray]) -> Samples:
    return _read_varlen(path, arrays) if form == "varlen" else _read_fixed(path, arrays)


def read_shard(path: str | os.PathLike, rows: slice = slice(None)) -> Samples:
    """Reads one shard of either form (or only its `rows`); raises ShardError naming the file and the problem."""
    form, arrays = read_arrays(path, rows)
    return samples_from_arrays(Path(path), form, arrays)


def row_blocks(samples: int, block: int) -> list[slice]:
    """Row ranges of at most `block` rows covering `samples` rows: to read a large shard a piece at a time."""
    return [slice(first, min(first + block, samples)) for first in range(0, samples, block)]


def _read_fixed(path: Path, arrays: dict[str, np.ndarray]) -> Samples:
    ids, mask, seg = arrays["input_ids"], arrays["input_mask"], arrays["segment_ids"]
    positions, mlm_ids, nsp = arrays["masked_lm_positions"], arrays["masked_lm_ids"], arrays["next_sentence_labels"]
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
    return Samples(exact(path, "input_ids", ids[real], np.int32), exact(path, "segment_ids", seg[real], np.int8),
                   offsets, exact(path, "masked_lm_positions", positions, np.int32),
                   exact(path, "masked_lm_ids", mlm_ids, np.int32),
                   exact(path, "next_sentence_labels", nsp.reshape(n), np.int8))


def _read_varlen(path: Path, arrays: dict[str, np.ndarray]) -> Samples:
    ids, seg, positions, mlm_ids = (arrays[k] for k in VARLEN_KEYS[:4])
    n = len(ids)
    lengths, counts = _row_lengths(ids), _row_lengths(positions)
    if len(seg) != n or not np.array_equal(_row_lengths(seg), lengths):
        raise ShardError(f"{path}: segment_ids rows do not match input_ids rows")
    id_counts = _row_lengths(mlm_ids)
    if len(mlm_ids) != n or not np.array_equal(id_counts, counts):
        i = int(np.argmax(id_counts != counts)) if len(mlm_ids) == n else min(n, len(mlm_ids))
        raise ShardError(f"{path}: row {i}: masked_lm_positions and masked_lm_ids differ in length")
    width = int(counts.max()) if n else 0
    listed = np.arange(width)[None, :] < counts[:, None]
    pos = np.zeros((n, width), dtype=np.int32)
    mid = np.zeros((n, width), dtype=np.int32)
    pos[listed] = _flat(path, "masked_lm_positions", positions, np.int32)
    mid[listed] = _flat(path, "masked_lm_ids", mlm_ids, np.int32)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    nsp = exact(path, "next_sentence_labels", np.asarray(arrays["next_sentence_labels"]).reshape(n), np.int8)
    return Samples(_flat(path, "input_ids", ids, np.int32), _flat(path, "segment_ids", seg, np.int8), offsets, pos,
                   mid, nsp)


def _row_lengths(rows: np.ndarray) -> np.ndarray:
    return np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))


def _flat(path: Path, key: str, rows: np.ndarray, dtype: type) -> np.ndarray:
    return exact(path, key, np.concatenate(list(rows)), dtype) if len(rows) else np.zeros(0, dtype)


@dataclass(frozen=True)
class ShardHeader:
    samples: int
    form: str  # "fixed" or "varlen"
    seq_length: int | None  # the fixed form's row width
    predictions: int | None  # the fixed form's masked-position width


def _layout_problem(path: Path, f: h5py.File, keys: tuple[str, ...], varlen: bool) -> str | None:
    """What the HDF5 metadata says is wrong with a shard's columns: a dtype that is not an integer, or shapes
    that disagree (caught before a run starts, not when the loader meets the shard)."""
    for key in keys:
        dtype = h5py.check_vlen_dtype(f[key].dtype) or f[key].dtype
        if dtype.kind not in "iu":
            return f"{path}: {key} has dtype {dtype}; MLPerf shards hold integers"
    nsp = f["next_sentence_labels"].shape
    if int(np.prod(nsp[1:])) != 1:
        return f"{path}: next_sentence_labels {nsp[1:]} per sample must be one label"
    if varlen:
        rows = [key for key in keys[:4] if f[key].ndim != 1]
        return f"{path}: {', '.join(rows)} must hold one variable-length row per sample" if rows else None
    ids, mask, seg = (f[key].shape for key in ("input_ids", "input_mask", "segment_ids"))
    if len(ids) != 2 or mask != ids or seg != ids:
        return (f"{path}: input_ids {ids[1:]}, input_mask {mask[1:]} and segment_ids {seg[1:]} per sample must be "
                "[max_seq_length] alike")
    positions, masked_ids = f["masked_lm_positions"].shape, f["masked_lm_ids"].shape
    if len(positions) != 2 or positions != masked_ids:
        return (f"{path}: masked_lm_positions {positions[1:]} and masked_lm_ids {masked_ids[1:]} per sample differ "
                "in shape")
    return None


def shard_header(path: str | os.PathLike) -> ShardHeader:
    """The sample count and shapes of a shard, from HDF5 metadata alone (no sample data is read); raises
    ShardError for a shard whose keys, dtypes or shapes are not those of an MLPerf shard."""
    path = shard_file(path)
    try:
        with h5py.File(path, "r") as f:
            varlen = "input_ids" in f and _is_varlen(f["input_ids"])
            keys = VARLEN_KEYS if varlen else FIXED_KEYS
            _check_keys(path, f, keys, "variable-length" if varlen else "fixed-length")
            rows = {k: f[k].shape[0] if f[k].ndim else 0 for k in keys}
            if len(set(rows.values())) != 1:
                raise ShardError(f"{path}: keys have different sample counts {rows}")
            problem = _layout_problem(path, f, keys, varlen)
            if problem:
                raise ShardError(problem)
            if varlen:
                return ShardHeader(rows["input_ids"], "varlen", None, None)
            return ShardHeader(rows["input_ids"], "fixed", f["input_ids"].shape[1],
                               f["masked_lm_positions"].shape[1])
    except OSError as e:
        raise ShardError(f"{path}: not a readable HDF5 file ({e})") from e


@dataclass(frozen=True)
class SampleLimits:
    """What the model can take: token and masked ids below the vocabulary size, sequences up to max_seq_length."""

    vocab_size: int
    max_seq_length: int

    def outside(self, ids: np.ndarray) -> np.ndarray:
        return (ids < 0) | (ids >= self.vocab_size)

    def check(self, samples: Samples, path: Path) -> None:
        """Raises ShardError naming `path` and the first sample (its row in the shard) the model cannot take:
        a sequence too long, a token or masked id outside the vocabulary, a segment id or next-sentence label
        other than 0 or 1, a masked position outside its sequence. Vectorised: cheap next to a training step."""
        lengths, offsets = samples.lengths, samples.offsets
        positions, masked_ids = samples.masked_positions.astype(np.int64), samples.masked_ids
        listed = positions != 0  # 0 ends the list (the place of [CLS], never masked)
        bad_position = listed & ((positions < 0) | (positions >= lengths[:, None]))
        bad_masked_id = listed & self.outside(masked_ids)

        def rows_with(bad_tokens: np.ndarray) -> np.ndarray:
            if not bad_tokens.any():
                return np.zeros(len(samples), dtype=bool)
            before = np.concatenate([[0], np.cumsum(bad_tokens)])
            return before[offsets[1:]] > before[offsets[:-1]]

        def tokens(row: int) -> np.ndarray:
            return samples.tokens[offsets[row]:offsets[row + 1]]

        def segments(row: int) -> np.ndarray:
            return samples.segments[offsets[row]:offsets[row + 1]]

        checks = [
            (lengths > self.max_seq_length,
             lambda r: f"{lengths[r]} tokens, more than run.max_seq_length {self.max_seq_length}"),
            (rows_with(self.outside(samples.tokens)),
             lambda r: f"token id {tokens(r)[self.outside(tokens(r))][0]} is outside the vocabulary of "
                       f"{self.vocab_size} pieces"),
            (rows_with((samples.segments < 0) | (samples.segments > 1)),
             lambda r: f"segment id {segments(r)[(segments(r) < 0) | (segments(r) > 1)][0]} is not 0 or 1"),
            (bad_position.any(1),
             lambda r: f"masked position {positions[r][bad_position[r]][0]} is outside its sequence of {lengths[r]} "
                       "tokens"),
            (bad_masked_id.any(1),
             lambda r: f"masked id {masked_ids[r][bad_masked_id[r]][0]} is outside the vocabulary of "
                       f"{self.vocab_size} pieces"),
            ((samples.nsp_labels != 0) & (samples.nsp_labels != 1),
             lambda r: f"next_sentence_labels is {samples.nsp_labels[r]}, not 0 or 1"),
        ]
        found = [(int(np.argmax(bad)), describe) for bad, describe in checks if bad.any()]
        if found:
            row, describe = min(found, key=lambda item: item[0])
            raise ShardError(f"{path}: sample {row}: {describe(row)}; the data does not fit the vocabulary and the "
                             "descriptor: check it with `mlperf-bert data verify`")
