"""`mlperf-bert data import`: the reference's TFRecord files (create_pretraining_data's output, the
pick_eval_samples eval set) -> MLPerf HDF5 shards in either form, without TensorFlow.

Every record's checksums are verified (`tfrecord`); a truncated or corrupt record stops the import with a
line naming the file and the record. Each input file becomes one shard with its samples in file order, so a
part written by the reference and the same part prepared with `data prepare` give the same shard.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bert.data.shards import FIXED_KEYS, READ_DTYPES, samples_from_arrays
from bert.ownership import claim_folder
from bert.prep.progress import Advance, progress_bar
from bert.prep.shard_writer import ShardWriter
from bert.prep.tfrecord import RecordError, int64_features, read_records
from bert.prep.worker_pool import run_parallel

SUFFIXES = (".tfrecord", ".tfrecords")


@dataclass(frozen=True)
class ImportResult:
    source: Path
    shard: Path
    samples: int


def shard_path(source: Path, out_dir: Path) -> Path:
    name = source.name
    for suffix in SUFFIXES:
        name = name.removesuffix(suffix)
    return out_dir / f"{name}.hdf5"


@dataclass(frozen=True)
class _Import:
    out_dir: Path
    form: str
    vocab_size: int | None  # sets the id width of the variable-length form, as `data prepare` does

    def __call__(self, source: Path, report: Advance) -> ImportResult:
        target = shard_path(source, self.out_dir)
        writer, count, widths = None, 0, None
        try:
            for records in read_records(source):
                values = int64_features(source, count, records, FIXED_KEYS)
                widths = widths or (int(values["input_ids"][1][0]), int(values["masked_lm_positions"][1][0]))
                arrays = _rows(source, count, values, widths)
                _check_range(source, count, arrays, self.vocab_size)
                if writer is None:
                    writer = ShardWriter(target, self.form, widths[0], widths[1], self.vocab_size)
                writer.append(samples_from_arrays(source, "fixed", arrays))
                count += len(records)
                report(sum(len(r) + 16 for r in records))
            if writer is None:
                raise RecordError(f"{source}: holds no records")
        except BaseException:
            if writer is not None:
                writer.abort()
            raise
        writer.close()
        return ImportResult(source, target, count)


def _rows(source: Path, first: int, values: dict[str, tuple[np.ndarray, np.ndarray]], widths: tuple[int, int]
          ) -> dict[str, np.ndarray]:
    """The fixed-form arrays of a block of records, after checking that every record has the widths."""
    length, predictions = widths
    want = {"input_ids": length, "input_mask": length, "segment_ids": length, "masked_lm_positions": predictions,
            "masked_lm_ids": predictions, "next_sentence_labels": 1}
    arrays = {}
    for key, width in want.items():
        flat, counts = values[key]
        bad = np.flatnonzero(counts != width)
        if len(bad):
            raise RecordError(f"{source}: record {first + bad[0]}: {key} has {counts[bad[0]]} values, the "
                              f"first record {width}; every record of a file must have the same shape")
        arrays[key] = flat.reshape(len(counts), width) if key != "next_sentence_labels" else flat
    return arrays


def _check_range(source: Path, first: int, arrays: dict[str, np.ndarray], vocab_size: int | None) -> None:
    """Every value fits the dtype it is stored in (and ids the vocabulary, when given): an import is exact or
    refused, never wrapped. Raises RecordError naming the file, the record, the feature and the value."""
    for key, array in arrays.items():
        in_vocab = vocab_size is not None and key in ("input_ids", "masked_lm_ids")
        bound = vocab_size if in_vocab else int(np.iinfo(READ_DTYPES[key]).max) + 1
        rows = array.reshape(len(array), -1)
        bad = (rows < 0) | (rows >= bound)
        if bad.any():
            row = int(np.argmax(bad.any(1)))
            value = int(rows[row][bad[row]][0])
            limit = f"the vocabulary of {vocab_size} pieces (--vocab)" if in_vocab else \
                f"0..{bound - 1}, what the shard stores it as ({np.dtype(READ_DTYPES[key]).name})"
            raise RecordError(f"{source}: record {first + row}: {key} holds {value}, outside {limit}; the records "
                              "are not pre-training samples of this vocabulary")


def import_tfrecords(sources: list[Path], out_dir: Path, form: str = "fixed", vocab_size: int | None = None,
                     workers: int = 1, overwrite: bool = False, show_progress: bool = True,
                     writer: str = "data import") -> list[ImportResult]:
    """One shard per TFRecord file in `out_dir` (claimed for `writer`, bert.ownership; --overwrite removes
    what it imported there before), files on `workers` processes. `vocab_size` (the vocabulary's) lets the
    variable-length form store 16-bit ids, as `data prepare` does, and every id is checked against it."""
    targets = [shard_path(s, out_dir) for s in sources]
    clash = {t for t in targets if targets.count(t) > 1}
    if clash:
        raise ValueError(f"{sorted(clash)[0]}: two inputs would be imported to this shard; rename one of them")
    with claim_folder(out_dir, writer, sources, mode="overwrite" if overwrite else "resume") as folder:
        existing = [t for t in targets if t.exists()]
        if existing:
            raise FileExistsError(f"{existing[0]}: already exists; pass --overwrite to replace it")
        folder.record(*(t.name for t in targets))
        total = sum(s.stat().st_size for s in sources)
        with progress_bar("import", total, "bytes", show_progress) as advance:
            return run_parallel(_Import(out_dir, form, vocab_size), sources, workers, advance)
