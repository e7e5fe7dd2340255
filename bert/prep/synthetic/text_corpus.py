"""`mlperf-bert data synth-text`: the synthetic grammar's language as plain text in the reference layout.

For exercising the text pipeline (vocab, prepare) on a realistic amount of text without downloads. The
grammar (bert.prep.synthetic.grammar) writes documents as word-piece ids; here the pieces are joined back into words
(`kalo ##mi` -> `kalomi`, punctuation attached to the word before it), sentences start with a capital
letter, one sentence per line and a blank line after each document. Parts and the eval text come from
separate random streams of one lexicon, so the eval documents are not training documents.

Layout: OUT/train/part-00000-of-0000P.txt ... and OUT/eval.txt.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bert.mlperf_rules import REFERENCE_PREP
from bert.ownership import claim_folder, temporary_path
from bert.prep.synthetic.grammar import PUNCTUATION, DocumentWriter, Lexicon, build_lexicon

TRAIN_DIR, EVAL_FILE = "train", "eval.txt"
WRITER = "data synth-text"


@dataclass(frozen=True)
class TextCorpusSpec:
    megabytes: float = 50.0  # training text, split evenly over the parts
    parts: int = 8
    eval_megabytes: float = 1.0  # 0: no eval text
    seed: int = REFERENCE_PREP.random_seed
    vocab_size: int = 4096  # the grammar's lexicon (its word pieces), not the vocabulary `vocab` learns
    mean_sentences: float = 24.0  # per document; Wikipedia articles are long, the grammar's default is 8

    def check(self) -> None:
        if self.megabytes <= 0 or self.parts < 1 or self.eval_megabytes < 0:
            raise ValueError("--megabytes must be positive, --parts at least 1 and --eval-megabytes 0 or more")
        if self.mean_sentences < 1:
            raise ValueError("--mean-sentences must be at least 1")


def render_sentence(pieces: tuple[str, ...], ids: list[int]) -> str:
    words: list[str] = []
    for piece in (pieces[i] for i in ids):
        if piece.startswith("##") or (piece in PUNCTUATION and words):
            words[-1] += piece.removeprefix("##")
        else:
            words.append(piece)
    text = " ".join(words)
    return text[:1].upper() + text[1:]


def write_part(path: Path, lexicon: Lexicon, rng: random.Random, size_bytes: int, mean_sentences: float,
               on_bytes: Callable[[int], None] | None = None) -> int:
    """Writes whole documents until the part holds at least `size_bytes`; returns the bytes written."""
    writer = DocumentWriter(lexicon, rng, mean_sentences=mean_sentences)
    pieces = lexicon.vocab.pieces
    written = 0
    tmp = temporary_path(path)
    try:
        with open(tmp, "wb") as f:
            while written < size_bytes:
                document = "".join(render_sentence(pieces, s) + "\n" for s in writer.document()) + "\n"
                data = document.encode("utf-8")
                f.write(data)
                written += len(data)
                if on_bytes is not None:
                    on_bytes(len(data))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return written


def write_text_corpus(out_dir: str | os.PathLike, spec: TextCorpusSpec, overwrite: bool = False,
                      on_bytes: Callable[[int], None] | None = None) -> list[Path]:
    """Writes the training parts and the eval text; returns the paths written."""
    spec.check()
    out = Path(out_dir)
    lexicon = build_lexicon(spec.vocab_size, seed=spec.seed)
    part_bytes = int(spec.megabytes * 1e6 / spec.parts)
    written = []
    with claim_folder(out, WRITER, mode="overwrite" if overwrite else "new") as folder:
        with folder.subfolder(TRAIN_DIR) as train:
            names = [f"part-{i:05d}-of-{spec.parts:05d}.txt" for i in range(spec.parts)]
            train.record(*names)
            for i, name in enumerate(names):
                path = out / TRAIN_DIR / name
                write_part(path, lexicon, random.Random(f"{spec.seed}/train/{i}"), part_bytes, spec.mean_sentences,
                           on_bytes)
                written.append(path)
        if spec.eval_megabytes > 0:
            folder.record(EVAL_FILE)
            path = out / EVAL_FILE
            write_part(path, lexicon, random.Random(f"{spec.seed}/eval"), int(spec.eval_megabytes * 1e6),
                       spec.mean_sentences, on_bytes)
            written.append(path)
    return written
