"""The manifest of a verified dataset directory, and the cheap start-up check against it.

`mlperf-bert data verify DIR` writes DIR/manifest.json: for every shard (and the vocabulary) its path
relative to DIR, size, SHA-256, sample count and form, and what verification proved of its samples (the
largest token id, the longest sample, the most masked positions). At start-up the trainer compares the
directory with it without hashing (names, sizes and the sample counts of the HDF5 headers), so a shard added,
removed, cut short or rewritten after verification stops the run with one line naming the file; and it
compares what was proved with its vocabulary and descriptor, before any sample is read.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from bert.data.shards import ShardError, shard_header
from bert.ownership import write_text_atomically

MANIFEST_FILE = "manifest.json"


@dataclass(frozen=True)
class ManifestEntry:
    path: str  # relative to the dataset directory, with forward slashes
    size: int
    sha256: str
    samples: int | None  # None for the vocabulary
    form: str  # "fixed", "varlen" or "vocab"
    # What verification proved of the samples (None for the vocabulary, and in manifests older than these fields).
    max_token_id: int | None = None  # of input_ids and masked_lm_ids
    max_length: int | None = None  # tokens of the longest sample
    max_predictions: int | None = None  # masked positions of the sample with the most


def shard_files(root: Path) -> list[Path]:
    """Every shard below `root` (hidden files, such as unfinished temporary ones, excluded)."""
    return sorted(p for p in root.rglob("*.hdf5") if not any(part.startswith(".") for part in
                                                             p.relative_to(root).parts))


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def write_manifest(root: Path, entries: list[ManifestEntry]) -> Path:
    path = root / MANIFEST_FILE
    data = {"files": [asdict(e) for e in entries], "samples": sum(e.samples or 0 for e in entries)}
    write_text_atomically(path, json.dumps(data, indent=1) + "\n")
    return path


def load_manifest(root: Path) -> list[ManifestEntry] | None:
    """The entries of root/manifest.json, or None when there is none."""
    path = root / MANIFEST_FILE
    if not path.is_file():
        return None
    try:
        return [ManifestEntry(**e) for e in json.loads(path.read_text())["files"]]
    except (ValueError, KeyError, TypeError) as e:
        raise ShardError(f"{path}: not a manifest written by `mlperf-bert data verify` ({e}); re-run "
                         f"`mlperf-bert data verify {root}`") from None


def check_manifest(root: Path, counts: dict[Path, int] | None = None) -> list[ManifestEntry] | None:
    """Compares the directory with its manifest, if it has one (returns its entries, or None). `counts` holds
    sample counts already read from headers. Raises ShardError naming the first file that differs."""
    entries = load_manifest(root)
    if entries is None:
        return None
    counts = counts or {}
    fix = f"; if the change is intended, re-run `mlperf-bert data verify {root}`"
    listed = {e.path for e in entries}
    for path in shard_files(root):
        if path.relative_to(root).as_posix() not in listed:
            raise ShardError(f"{path}: not in {root / MANIFEST_FILE}{fix}")
    for e in entries:
        path = root / e.path
        if not path.is_file():
            raise ShardError(f"{path}: listed in {root / MANIFEST_FILE} but missing{fix}")
        size = path.stat().st_size
        if size != e.size:
            raise ShardError(f"{path}: {size} bytes, the manifest says {e.size}: changed since verification{fix}")
        if e.samples is not None:
            samples = counts[path] if path in counts else shard_header(path).samples
            if samples != e.samples:
                raise ShardError(f"{path}: {samples} samples, the manifest says {e.samples}: changed since "
                                 f"verification{fix}")
    return entries


def check_verified_limits(root: Path, entries: list[ManifestEntry], vocab: Path, vocab_size: int,
                          max_seq_length: int, max_predictions: int) -> None:
    """Compares what `data verify` proved of each shard with the vocabulary and the descriptor's limits;
    raises ShardError naming the first shard that does not fit."""
    for e in entries:
        path = root / e.path
        if e.max_token_id is not None and e.max_token_id >= vocab_size:
            raise ShardError(f"{path}: holds token ids up to {e.max_token_id} (proved by `mlperf-bert data verify`), "
                             f"but {vocab} has {vocab_size} pieces: the vocabulary does not match the data; use the "
                             "vocabulary the shards were made with (run.dataset.vocab_file)")
        if e.max_length is not None and e.max_length > max_seq_length:
            raise ShardError(f"{path}: holds samples of {e.max_length} tokens, more than run.max_seq_length "
                             f"{max_seq_length}")
        if e.max_predictions is not None and e.max_predictions > max_predictions:
            raise ShardError(f"{path}: holds samples with {e.max_predictions} masked positions, more than "
                             f"run.max_predictions_per_seq {max_predictions}")
