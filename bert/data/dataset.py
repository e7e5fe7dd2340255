"""The files of a dataset directory and the start-up checks on them.

`check_dataset` reads only HDF5 metadata (keys, shapes, dtypes), never sample data: MLPerf's clock starts
before the data is read, but a wrong path or a shard without a required key should stop the run before it
starts, with one line that names the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import h5py

from bert.data.shards import FIXED_KEYS, VARLEN_KEYS, ShardError
from bert.data.vocab import Vocab, load_vocab
from bert.system import System


@dataclass(frozen=True)
class DatasetFiles:
    root: Path
    train_shards: list[Path]
    eval_file: Path
    vocab_file: Path


def dataset_files(system: System, data_dir: str | Path | None = None) -> DatasetFiles:
    spec = system.run.dataset
    root = system.dataset_dir(data_dir)
    if not root.is_dir():
        hint = (" (run_and_time.sh writes this synthetic dataset on first use, or run "
                f"`mlperf-bert data synth --system {system.name}`)") if spec.synthetic else ""
        raise ShardError(f"{root}: dataset directory does not exist{hint}; set run.dataset.dir in "
                         f"{system.path} or pass --data-dir")
    shards = sorted(root.glob(spec.train_glob))
    if not shards:
        raise ShardError(f"{root}: no training shards match {spec.train_glob!r} (run.dataset.train_glob)")
    return DatasetFiles(root, shards, root / spec.eval_file, root / spec.vocab_file)


def _shard_header(path: Path) -> tuple[int, int | None, int | None]:
    """(samples, fixed sequence length or None, fixed prediction width or None) from metadata alone."""
    try:
        with h5py.File(path, "r") as f:
            varlen = "input_ids" in f and h5py.check_vlen_dtype(f["input_ids"].dtype) is not None
            keys = VARLEN_KEYS if varlen else FIXED_KEYS
            missing = [k for k in keys if k not in f]
            if missing:
                raise ShardError(f"{path}: missing key(s) {', '.join(missing)}; a "
                                 f"{'variable' if varlen else 'fixed'}-length shard needs {', '.join(keys)}")
            rows = {k: f[k].shape[0] for k in keys}
            if len(set(rows.values())) != 1:
                raise ShardError(f"{path}: keys have different sample counts {rows}")
            n = rows["input_ids"]
            if varlen:
                return n, None, None
            return n, f["input_ids"].shape[1], f["masked_lm_positions"].shape[1]
    except OSError as e:
        raise ShardError(f"{path}: not a readable HDF5 file ({e})") from e


def check_dataset(files: DatasetFiles, system: System) -> Vocab:
    """Validates every shard's header, the eval size and the vocabulary against the descriptor."""
    run = system.run
    for path in [*files.train_shards, files.eval_file]:
        if not path.is_file():
            raise ShardError(f"{path}: no such file")
        n, length, width = _shard_header(path)
        if length is not None and length > run.max_seq_length:
            raise ShardError(f"{path}: sequences of {length} tokens exceed run.max_seq_length "
                             f"{run.max_seq_length}")
        if width is not None and width > run.max_predictions_per_seq:
            raise ShardError(f"{path}: {width} masked positions per sample exceed "
                             f"run.max_predictions_per_seq {run.max_predictions_per_seq}")
        if path == files.eval_file and n < run.eval.samples:
            raise ShardError(f"{path}: has {n} eval samples, fewer than run.eval.samples = {run.eval.samples}")
    vocab = load_vocab(files.vocab_file)
    model_vocab = system.model_config().vocab_size
    if len(vocab) > model_vocab:
        raise ShardError(f"{files.vocab_file}: {len(vocab)} word pieces but model {run.model!r} has vocab_size "
                         f"{model_vocab}; set run.model_overrides.vocab_size to at least {len(vocab)}")
    return vocab
