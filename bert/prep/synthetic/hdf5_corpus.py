"""`mlperf-bert data synth`: a deterministic synthetic pre-training corpus in the MLPerf HDF5 format.

Writes DIR/vocab.txt, DIR/train/part-XXXXX.hdf5 and DIR/eval.hdf5. Documents come from bert.prep.synthetic.grammar;
samples are cut and masked exactly as the reference pipeline does (bert.prep.instances). Eval documents are
written by their own random stream and never appear in training.

DIR is marked as this writer's before anything else is written into it (OWNER_MARKER), and as complete after
everything (COMPLETE_MARKER). Only a folder that bears the first mark is ever emptied or refilled: any other
folder that holds files is refused, whatever the caller asks, because a dataset directory (DATADIR) may hold a
user's real data.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import numpy as np

from bert.data.shards import Samples, write_shard
from bert.prep.instances import Documents, SampleSpec, SpecialIds, build_samples, plan_instances
from bert.prep.synthetic.grammar import DocumentWriter, Lexicon, build_lexicon
from bert.system import SyntheticDataSpec

TRAIN_DIR, EVAL_FILE, VOCAB_FILE = "train", "eval.hdf5", "vocab.txt"
OWNER_MARKER = ".mlperf-bert-synthetic"  # written first: this folder holds (part of) a corpus written here
COMPLETE_MARKER = ".complete"  # written last


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
    return is_own(out_dir) and (Path(out_dir) / COMPLETE_MARKER).is_file()


def is_own(out_dir: str | os.PathLike) -> bool:
    """Whether `out_dir` was made by `synthesize` (whole or interrupted). A corpus written before the owner mark
    existed is recognised by its completion mark, which holds the repr of its SyntheticDataSpec."""
    out = Path(out_dir)
    if (out / OWNER_MARKER).is_file():
        return True
    try:
        return (out / COMPLETE_MARKER).read_text().startswith(f"{SyntheticDataSpec.__name__}(")
    except (OSError, UnicodeDecodeError):
        return False


def _clear_own(out: Path) -> None:
    """Empties a folder of this writer's, keeping its owner mark (so that it stays its own if interrupted)."""
    for entry in out.iterdir():
        if entry.name == OWNER_MARKER:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def synthesize(out_dir: str | os.PathLike, spec: SyntheticDataSpec, overwrite: bool = False) -> Path:
    """Writes the corpus into `out_dir`: a folder that does not exist or is empty, or, with `overwrite`, one
    this function wrote before. Raises FileExistsError for any other folder that holds files (whatever
    `overwrite` says), and for one of its own without `overwrite`."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out}: is a file, not a dataset folder; choose another folder (DATADIR, --out)")
    if out.is_dir() and any(out.iterdir()):
        if not is_own(out):
            raise FileExistsError(f"{out}: holds files that `mlperf-bert data synth` did not write (it has no "
                                  f"{OWNER_MARKER}), so nothing is written there; choose another folder for the "
                                  "synthetic corpus (DATADIR, --out), or empty this one yourself")
        if not overwrite:
            raise FileExistsError(f"{out}: already holds a synthetic corpus; pass --overwrite to replace it")
        _clear_own(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / OWNER_MARKER).write_text(f"written by mlperf-bert data synth: {spec!r}\n")
    (out / TRAIN_DIR).mkdir()
    lexicon = build_lexicon(spec.vocab_size, seed=spec.seed)
    lexicon.vocab.write(out / VOCAB_FILE)
    train = _samples(lexicon, spec.train_samples, spec, seed=spec.seed + 1)
    bounds = np.linspace(0, len(train), spec.shards + 1).astype(int)
    for i in range(spec.shards):
        part = train.take(np.arange(bounds[i], bounds[i + 1]))
        write_shard(out / TRAIN_DIR / f"part-{i:05d}-of-{spec.shards:05d}.hdf5", part, spec.form,
                    spec.max_seq_length, spec.max_predictions)
    evaluation = _samples(lexicon, spec.eval_samples, spec, seed=spec.seed + 2)
    write_shard(out / EVAL_FILE, evaluation, spec.form, spec.max_seq_length, spec.max_predictions)
    (out / COMPLETE_MARKER).write_text(repr(spec) + "\n")
    return out


def synthesize_if_missing(out_dir: str | os.PathLike, spec: SyntheticDataSpec) -> bool:
    """Writes the corpus unless a complete one is there; completes (rewrites) an interrupted one of its own.
    Returns whether it wrote. A folder it did not write is refused as `synthesize` refuses it."""
    if is_complete(out_dir):
        return False
    synthesize(out_dir, spec, overwrite=is_own(out_dir))
    return True
