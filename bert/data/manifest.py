"""The manifest of a verified dataset directory, and the cheap start-up check against it.

`mlperf-bert data verify DIR` writes DIR/manifest.json: for every shard (and the vocabulary) its path
relative to DIR, size, SHA-256, sample count, form and role (training or eval), and what verification proved of
its samples (the largest token id, the longest sample, the most masked positions); then the dataset-wide checks
that ran with their figures (duplicates, eval samples in training, the eval pick, the vocabulary) and the
problems found. At start-up the trainer refuses a directory without a manifest, with one that lacks those
checks or records problems, and one whose files changed since (names, sizes, the sample counts of the HDF5
headers, and modification times later than the manifest's; no hashing), each with one line naming the file and
the `data verify` command; and it compares what was proved with its vocabulary and descriptor, before any sample
is read.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from bert.data.shards import ShardError, shard_header
from bert.ownership import write_text_atomically
from bert.regular_files import NotRegularFile, open_regular

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
    role: str | None = None  # "train" or "eval" (None for the vocabulary, and in manifests older than the field)


# The dataset-wide checks a manifest must record before training starts on its directory (bert.prep.verify).
REQUIRED_CHECKS = ("samples", "duplicates", "eval_in_train", "eval_pick", "vocabulary")


@dataclass
class Manifest:
    entries: list[ManifestEntry]
    checks: dict  # check name -> its figures (empty in manifests older than the checks)
    problems: list[str]  # what `data verify` found wrong; training refuses a manifest that records any


def shard_files(root: Path) -> list[Path]:
    """Every shard below `root` (hidden files, such as unfinished temporary ones, excluded)."""
    return sorted(p for p in root.rglob("*.hdf5") if not any(part.startswith(".") for part in
                                                             p.relative_to(root).parts))


def sha256_of(path: Path) -> str:
    """The SHA-256 of the regular file at `path` (ShardError for a FIFO or a device, which would never end)."""
    digest = hashlib.sha256()
    try:
        f = open_regular(path)
    except NotRegularFile as e:
        raise ShardError(f"{path}: is {e.kind}, not a file of a dataset; a dataset holds plain files only") from None
    with f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def write_manifest(root: Path, manifest: Manifest) -> Path:
    path = root / MANIFEST_FILE
    data = {"files": [asdict(e) for e in manifest.entries], "samples": sum(e.samples or 0 for e in manifest.entries),
            "checks": manifest.checks, "problems": manifest.problems,
            "verdict": "failed" if manifest.problems else "passed"}
    write_text_atomically(path, json.dumps(data, indent=1) + "\n")
    return path


def load_manifest(root: Path) -> Manifest | None:
    """root/manifest.json, or None when there is none."""
    path = root / MANIFEST_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        return Manifest([ManifestEntry(**e) for e in data["files"]], dict(data.get("checks", {})),
                        list(data.get("problems", [])))
    except (ValueError, KeyError, TypeError) as e:
        raise ShardError(f"{path}: not a manifest written by `mlperf-bert data verify` ({e}); re-run "
                         f"`mlperf-bert data verify {root}`") from None


def _verdict(root: Path) -> Manifest:
    """The manifest, when it records every required check and no problem; ShardError naming the fix otherwise."""
    manifest, path, command = load_manifest(root), root / MANIFEST_FILE, f"`mlperf-bert data verify {root}`"
    if manifest is None:
        raise ShardError(f"{root}: no {MANIFEST_FILE}: the dataset was never checked (duplicates, eval samples in "
                         f"training, the vocabulary); run {command}")
    missing = [name for name in REQUIRED_CHECKS if name not in manifest.checks]
    if missing:
        raise ShardError(f"{path}: written without the {', '.join(missing)} check(s) (an older `data verify`); "
                         f"run {command}")
    if manifest.problems:
        more = f" (and {len(manifest.problems) - 1} more)" if len(manifest.problems) > 1 else ""
        raise ShardError(f"{path}: `data verify` found this dataset unfit: {manifest.problems[0]}{more}; {command} "
                         "shows every problem")
    return manifest


def check_manifest(root: Path, counts: dict[Path, int] | None = None, read_headers: bool = True
                   ) -> list[ManifestEntry]:
    """Checks that the directory has a manifest recording every check and no problem, and compares the
    directory with it (returns its entries). `counts` holds sample counts already read from headers; without
    `read_headers` the counts not given are not compared (the names, sizes and times are). Raises ShardError
    naming the first file that differs."""
    manifest = _verdict(root)
    entries, written = manifest.entries, (root / MANIFEST_FILE).stat().st_mtime_ns
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
        stat = path.stat()
        if stat.st_size != e.size:
            raise ShardError(f"{path}: {stat.st_size} bytes, the manifest says {e.size}: changed since "
                             f"verification{fix}")
        if stat.st_mtime_ns > written:
            raise ShardError(f"{path}: modified after {root / MANIFEST_FILE} was written: changed since verification "
                             f"(a copy keeps the times with `cp -a` or `rsync -a`){fix}")
        if e.samples is not None and (read_headers or path in counts):
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


def check_verified_files(root: Path, entries: list[ManifestEntry], eval_file: Path, vocab_file: Path) -> None:
    """Raises ShardError unless `data verify` checked `eval_file` as the eval set (against the training shards)
    and the token ids against `vocab_file` (or a file of the same content)."""
    def listed(path: Path, role: str | None, form: str | None = None) -> bool:
        relative = Path(os.path.relpath(path, root)).as_posix()
        return any(e.path == relative and e.role == role and form in (None, e.form) for e in entries)

    if not listed(eval_file, "eval"):
        raise ShardError(f"{eval_file}: `data verify` did not check it as the eval set (against the training "
                         f"shards); run `mlperf-bert data verify {root} --eval {eval_file}`")
    if not listed(vocab_file, None, "vocab") and sha256_of(vocab_file) not in {e.sha256 for e in entries
                                                                                 if e.form == "vocab"}:
        raise ShardError(f"{vocab_file}: not the vocabulary `data verify` checked the token ids against; run "
                         f"`mlperf-bert data verify {root} --vocab {vocab_file}`")
