"""The eval file against the training shards, and against the pick of the reference's pick_eval_samples.py.

An eval sample that also occurs in training is scored on what the model was trained on. The reference's
preprocessing makes a few such samples by chance (short samples of short documents, masked alike), as it makes
duplicates: the same limit (bert.prep.duplicates.DUPLICATE_LIMIT) applies to the share of eval samples found in
a training set. Where the eval file's source is known (`--eval-source`, or the source that `data mlperf`
records in provenance.json), the file must hold exactly the samples pick_eval_samples.py picks from it, in its
order: sample int(i * (n / N)) of the n source samples, for i < N.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bert.data.shards import ShardError, read_shard, row_blocks, shard_header
from bert.mlperf_rules import EVAL_SAMPLES
from bert.prep.duplicates import DUPLICATE_LIMIT, SampleSet
from bert.prep.reshard import eval_pick
from bert.prep.sample_hashes import sample_hashes

EVAL_PREFIX = "eval"  # a shard at the top of a dataset folder named eval*.hdf5 is an eval file
PROVENANCE = "provenance.json"  # written by `data mlperf`: its "eval" entry names the source
READ_BLOCK = 8192


def default_eval_files(root: Path, shards: list[Path]) -> list[Path]:
    """The eval files of a dataset folder: its shards at the top whose names begin with "eval"."""
    return [p for p in shards if p.parent == root and p.name.startswith(EVAL_PREFIX)]


def recorded_source(root: Path) -> Path | None:
    """The eval set's source that `data mlperf` recorded, when it is still there."""
    try:
        source = json.loads((root / PROVENANCE).read_text())["eval"]["source"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    path = root / source
    return path if path.exists() else None


@dataclass
class EvalOverlap:
    """The eval samples of one eval file found in the training set that holds the most of them."""

    samples: int
    found: int = 0
    first: int = -1  # the first eval sample found
    shard: Path | None = None  # a training shard that holds it
    training_set: str = ""

    def update(self, training: SampleSet, hashes: np.ndarray) -> None:
        found, shard = training.members(hashes)
        if found.sum() > self.found:
            self.found, self.first = int(found.sum()), int(np.argmax(found))
            self.shard, self.training_set = training.paths[shard[self.first]], training.name

    @property
    def rate(self) -> float:
        return self.found / max(self.samples, 1)


def judge_overlap(path: Path, overlap: EvalOverlap) -> tuple[dict, list[str], str]:
    """(figures, problems, the summary line) of one eval file against the training sets."""
    figures = {"samples": overlap.samples, "in_train": overlap.found, "rate": overlap.rate}
    where = f"; sample {overlap.first} is also in {overlap.shard}" if overlap.found else ""
    line = (f"{path.name}: {overlap.found:,} of its {overlap.samples:,} samples are also in training "
            f"({overlap.rate:.2%}; limit {DUPLICATE_LIMIT:.0%}){where}")
    problems = []
    if overlap.rate > DUPLICATE_LIMIT:
        problems.append(f"{path}: {overlap.found:,} of its {overlap.samples:,} eval samples ({overlap.rate:.1%}) are "
                        f"also in {overlap.training_set}{where}: accuracy on them would be measured on training "
                        "data; make the eval set from text kept out of training (`mlperf-bert data eval-set`)")
    return figures, problems, line


def source_hashes(source: Path) -> np.ndarray:
    """The fingerprints of the source's samples in order (a shard, or a folder of shards in name order)."""
    shards = sorted(source.glob("*.hdf5")) if source.is_dir() else [source]
    if not shards:
        raise ShardError(f"{source}: no shards (*.hdf5) to check the eval pick against")
    parts = [sample_hashes(read_shard(shard, rows)) for shard in shards
             for rows in row_blocks(shard_header(shard).samples, READ_BLOCK)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)


def judge_pick(path: Path, form: str, hashes: np.ndarray, source: Path | None, source_prints: np.ndarray | None
               ) -> tuple[dict, list[str], str]:
    """(figures, problems, the summary line): whether the eval file (of `form`) is the reference's pick from
    `source`."""
    count = len(hashes)
    size = "" if count == EVAL_SAMPLES else f" (the reference's eval set has {EVAL_SAMPLES:,})"
    if source is None or source_prints is None:
        return ({"samples": count, "source": None, "reference_pick": None}, [],
                f"{path.name}: {count:,} samples{size}; its source is not known, so whether it is the reference's "
                "pick is not checked (--eval-source)")
    figures = {"samples": count, "source": str(source), "reference_pick": False}
    if len(source_prints) < count:
        return figures, [f"{path}: {count:,} samples, but its source {source} has only {len(source_prints):,}: it "
                         "was not picked from it"], f"{path.name}: not picked from {source}"
    wanted = source_prints[eval_pick(len(source_prints), count)]
    differ = np.flatnonzero(wanted != hashes)
    if len(differ):
        fix = f"mlperf-bert data eval-set --input {source} --out {path} --samples {count} --format {form} --overwrite"
        return figures, [f"{path}: {len(differ):,} of its {count:,} samples are not those pick_eval_samples.py picks "
                         f"from {source} (the first: sample {differ[0]}); make it with `{fix}`"], \
            f"{path.name}: not the reference's pick"
    figures["reference_pick"] = True
    return figures, [], (f"{path.name}: the {count:,} samples pick_eval_samples.py picks from the "
                         f"{len(source_prints):,} of {source}{size}")
