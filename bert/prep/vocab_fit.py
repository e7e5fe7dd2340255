"""Whether a dataset's token ids fit its vocabulary: the text of each sample (its masked places given back their
labels) counted by the kind of piece each id names in vocab.txt.

What the reference tokenizer (uncased, do_lower_case) makes from text never names a reserved piece ([unused17],
[PAD]; [MASK] only where a sample is masked) and never a piece with capitals, and rarely [UNK]. Ids made with
another vocabulary land on such pieces: the uncased BERT vocabulary reserves ids 104-998 for [unused] pieces,
where the cased one holds punctuation and letters, and the uncased one's word ids are cased words of the cased
one; cased text through an uncased vocabulary without lowercasing turns every capitalised word into [UNK] (17%
of the words of the MLPerf Wikipedia sample of mlcommons/training). The limits leave room for rare characters.
"""

from __future__ import annotations

import re

import numpy as np

from bert.data.shards import Samples
from bert.data.vocab import Vocab

WORD, UNKNOWN, RESERVED, CASED, STRUCTURE = range(5)  # kinds of piece; STRUCTURE ([CLS], [SEP]) is not counted
KIND_NAMES = ("word", "unk", "reserved", "cased")
LIMITS = {UNKNOWN: 0.01, RESERVED: 0.001, CASED: 0.01}  # share of the text's tokens
_BRACKETED = re.compile(r"\[.+\]")


def piece_kinds(vocab: Vocab) -> np.ndarray:
    """The kind of every id of `vocab` (int8)."""
    kinds = np.full(len(vocab), WORD, dtype=np.int8)
    for i, piece in enumerate(vocab.pieces):
        if _BRACKETED.fullmatch(piece):
            kinds[i] = RESERVED
        elif piece != piece.lower():
            kinds[i] = CASED
    kinds[[vocab.cls_id, vocab.sep_id]] = STRUCTURE
    kinds[vocab.id_of("[UNK]")] = UNKNOWN
    return kinds


def count_kinds(s: Samples, kinds: np.ndarray) -> np.ndarray:
    """Tokens of each counted kind (KIND_NAMES order) in the text of the samples: their input ids with each
    masked place holding its label again; ids outside the vocabulary (reported elsewhere) are not counted."""
    text = s.tokens.astype(np.int64)
    listed = s.masked_positions > 0
    rows = np.nonzero(listed)[0]
    places = s.offsets[rows] + s.masked_positions[listed]
    inside = places < s.offsets[rows + 1]
    text[places[inside]] = s.masked_ids[listed][inside]
    text = text[(text >= 0) & (text < len(kinds))]
    return np.bincount(kinds[text], minlength=STRUCTURE + 1)[:STRUCTURE].astype(np.int64)


def judge_vocabulary(counts: np.ndarray, vocab_path: str) -> tuple[dict, list[str], str]:
    """(the figures for the manifest, problems, the summary line) from the summed kind counts."""
    tokens = int(counts.sum())
    share = {kind: int(counts[kind]) / max(tokens, 1) for kind in LIMITS}
    figures = {"tokens": tokens, **{KIND_NAMES[k]: share[k] for k in LIMITS},
               "limits": {KIND_NAMES[k]: limit for k, limit in LIMITS.items()}}
    problems = []
    if share[RESERVED] > LIMITS[RESERVED]:
        problems.append(f"{vocab_path}: {share[RESERVED]:.2%} of the text's tokens are ids of reserved pieces "
                        "([unused...], [PAD], [MASK] where nothing is masked), which no text makes: the shards were "
                        "made with another vocabulary (the cased one?); pass the vocabulary they were made with "
                        "(--vocab, run.dataset.vocab_file) or make the shards again with this one")
    if share[CASED] > LIMITS[CASED]:
        problems.append(f"{vocab_path}: {share[CASED]:.2%} of the text's tokens are pieces with capitals: a cased "
                        "vocabulary or cased ids, but the MLPerf reference is uncased; make the shards again with "
                        "the uncased vocabulary (`mlperf-bert data prepare` lowercases the text)")
    if share[UNKNOWN] > LIMITS[UNKNOWN]:
        problems.append(f"{vocab_path}: {share[UNKNOWN]:.2%} of the text's tokens are [UNK]: the text's characters "
                        "or capitals are not in the vocabulary (cased text through an uncased vocabulary?); make the "
                        "shards again from lowercased text (`mlperf-bert data prepare` lowercases) with the "
                        "vocabulary of that text")
    line = (f"vocabulary: [UNK] {share[UNKNOWN]:.3%}, reserved pieces {share[RESERVED]:.3%}, pieces with capitals "
            f"{share[CASED]:.3%} of {tokens:,} text tokens (limits {LIMITS[UNKNOWN]:.0%}, {LIMITS[RESERVED]:.1%}, "
            f"{LIMITS[CASED]:.0%})")
    return figures, problems, line
