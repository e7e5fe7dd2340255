"""`mlperf-bert data synth`: a deterministic synthetic pre-training corpus in the MLPerf HDF5 format.

Writes DIR/vocab.txt, DIR/train/part-XXXXX.hdf5 and DIR/eval.hdf5. Documents come from bert.prep.synthetic.grammar;
samples are cut and masked as the reference pipeline does (bert.prep.fast_instances). Eval documents are
written by their own random stream and never appear in training. The corpus is then verified as
`mlperf-bert data verify` verifies any dataset (DIR/manifest.json, which training requires).

DIR is claimed as this writer's (bert.ownership) before anything is written into it: only a folder whose
record says that `data synth` wrote what it holds is ever emptied or refilled; any other folder that holds
files is refused, whatever the caller asks, because a dataset directory (DATADIR) may hold a user's real data.
COMPLETE_MARKER is written last.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bert.data.manifest import MANIFEST_FILE
from bert.data.settings import SyntheticDataSpec
from bert.data.shards import Samples
from bert.ownership import OwnedFolder, claim_folder
from bert.prep.fast_instances import build_samples, plan_instances
from bert.prep.instances import Documents, SampleSpec, SpecialIds
from bert.prep.shard_writer import write_shard
from bert.prep.synthetic.grammar import DocumentWriter, Lexicon, build_lexicon
from bert.prep.verify import verify_dataset

TRAIN_DIR, EVAL_FILE, VOCAB_FILE = "train", "eval.hdf5", "vocab.txt"
WRITER = "data synth"
LEGACY_OWNER_MARKER = ".mlperf-bert-synthetic"  # what marked a corpus folder before bert.ownership's record
COMPLETE_MARKER = ".complete"  # written last
FOREIGN_HINT = "choose another folder for the synthetic corpus (DATADIR, --out), or empty this one yourself"


def _samples(lexicon: Lexicon, count: int, spec: SyntheticDataSpec, seed: int) -> Samples:
    """`count` samples from fresh documents of one random stream, shuffled as the reference does."""
    rng = random.Random(seed)
    writer = DocumentWriter(lexicon, rng)
    vocab = lexicon.vocab
    special = SpecialIds(vocab.cls_id, vocab.sep_id, vocab.mask_id, len(vocab))
    sample_spec = SampleSpec(spec.max_seq_length, spec.max_predictions)
    tokens, plans, planned, base = [], [], 0, 0
    # Documents are made in batches so that random next sentences have other documents to come from.
    while planned < count:
        documents = Documents.from_lists([writer.document() for _ in range(256)])
        batch = plan_instances(documents, sample_spec, rng)
        batch[:, :4] += base
        tokens.append(documents.tokens)
        plans.append(batch)
        planned, base = planned + len(batch), base + len(documents.tokens)
    order = np.random.default_rng(seed).permutation(planned)[:count]
    return build_samples(np.concatenate(tokens), np.concatenate(plans)[order], sample_spec, special,
                         np.random.default_rng([seed, 1]))


def is_complete(out_dir: str | os.PathLike) -> bool:
    """Whether the folder holds a whole corpus of this writer's, verified (one written before corpora were
    verified is not: it is written again)."""
    out = Path(out_dir)
    if not (out / COMPLETE_MARKER).is_file() or not (out / MANIFEST_FILE).is_file():
        return False
    return OwnedFolder(out, WRITER, legacy=_written_before_records).files.get(COMPLETE_MARKER) == WRITER


def _written_before_records(out: Path) -> bool:
    """A corpus of this writer's from before bert.ownership: its owner mark, or (before that) its completion
    mark holding the repr of its SyntheticDataSpec."""
    if (out / LEGACY_OWNER_MARKER).is_file():
        return True
    try:
        return (out / COMPLETE_MARKER).read_text().startswith(f"{SyntheticDataSpec.__name__}(")
    except (OSError, UnicodeDecodeError):
        return False


def synthesize(out_dir: str | os.PathLike, spec: SyntheticDataSpec, overwrite: bool = False) -> Path:
    """Writes the corpus into `out_dir`: a folder that does not exist or is empty, or, with `overwrite`, one
    this function wrote before. Raises OwnershipError (a FileExistsError) for any other folder that holds
    files (whatever `overwrite` says), and for one of its own without `overwrite`."""
    out = Path(out_dir)
    with claim_folder(out, WRITER, mode="overwrite" if overwrite else "new", again="pass --overwrite to replace "
                      "the corpus", foreign_hint=FOREIGN_HINT, legacy=_written_before_records) as folder:
        _write(folder, spec)
    return out


def _write(folder: OwnedFolder, spec: SyntheticDataSpec) -> None:
    out = folder.path
    folder.record(VOCAB_FILE, EVAL_FILE, MANIFEST_FILE, COMPLETE_MARKER)
    lexicon = build_lexicon(spec.vocab_size, seed=spec.seed)
    lexicon.vocab.write(out / VOCAB_FILE)
    train = _samples(lexicon, spec.train_samples, spec, seed=spec.seed + 1)
    bounds = np.linspace(0, len(train), spec.shards + 1).astype(int)
    with folder.subfolder(TRAIN_DIR) as train_dir:
        names = [f"part-{i:05d}-of-{spec.shards:05d}.hdf5" for i in range(spec.shards)]
        train_dir.record(*names)
        for i, name in enumerate(names):
            part = train.take(np.arange(bounds[i], bounds[i + 1]))
            write_shard(out / TRAIN_DIR / name, part, spec.form, spec.max_seq_length, spec.max_predictions)
    evaluation = _samples(lexicon, spec.eval_samples, spec, seed=spec.seed + 2)
    write_shard(out / EVAL_FILE, evaluation, spec.form, spec.max_seq_length, spec.max_predictions)
    report = verify_dataset(out, show_progress=False, writer=WRITER)
    if report.problems:
        raise ValueError(f"{out}: the synthetic corpus fails verification: {report.problems[0]}")
    (out / COMPLETE_MARKER).write_text(repr(spec) + "\n")


def synthesize_if_missing(out_dir: str | os.PathLike, spec: SyntheticDataSpec,
                          on_wait: Callable[[str], None] | None = None) -> bool:
    """Writes the corpus unless a complete one is there; completes (rewrites) an interrupted one of its own.
    Returns whether it wrote. Another writer at work in the folder (a second wrapper, another node on a shared
    file system) is waited for, `on_wait` told once, and its corpus then taken as it is. A folder it did not
    write is refused as `synthesize` refuses it."""
    out = Path(out_dir)
    if is_complete(out):
        return False
    with claim_folder(out, WRITER, mode="resume", foreign_hint=FOREIGN_HINT, legacy=_written_before_records,
                      wait=on_wait) as folder:
        if is_complete(out):  # the writer waited for finished it
            return False
        folder.remove_all()
        _write(folder, spec)
    return True
