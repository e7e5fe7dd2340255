"""`mlperf-bert data synth`: a deterministic synthetic pre-training corpus in the MLPerf HDF5 format.

Writes DIR/vocab.txt, DIR/train/part-XXXXX.hdf5 and DIR/eval.hdf5. Documents come from bert.prep.synthetic.grammar;
samples are cut and masked exactly as the reference pipeline does (bert.prep.instances). Eval documents are
written by their own random stream and never appear in training.
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
COMPLETE_MARKER = ".complete"


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
    return (Path(out_dir) / COMPLETE_MARKER).is_file()


def synthesize(out_dir: str | os.PathLike, spec: SyntheticDataSpec, overwrite: bool = False) -> Path:
    """Writes the corpus; refuses to touch a directory with other content unless `overwrite`."""
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise FileExistsError(f"{out}: already holds files; pass --overwrite to replace them")
        shutil.rmtree(out)
    (out / TRAIN_DIR).mkdir(parents=True, exist_ok=True)
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
