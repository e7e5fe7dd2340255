"""Pre-training samples from documents, with the reference `create_pretraining_data` semantics.

A document is a run of sentences; a sentence a run of word-piece ids. From each document the reference cuts
chunks up to a target length (drawn once per document pass: shorter with probability `short_seq_prob`),
splits a chunk into segment A and B (B replaced by text from another document half of the time: the
next-sentence label), truncates the longer segment from a random end one token at a time, writes
`[CLS] A [SEP] B [SEP]`, and masks word pieces: round(15% of the sequence), at least 1, at most
`max_predictions`, chosen uniformly among the non-special tokens; 80% [MASK], 10% unchanged, 10% a random
vocabulary word. The dupe factor repeats the pass over the documents, and the instances are shuffled.

The work is split in two so that it runs at array speed: `plan_instances` walks the sentences in Python
and records each instance as four token offsets (A and B are contiguous runs of the flat token array) and
its label; `build_samples` truncates, assembles and masks a block of planned instances with numpy. The
draws are those of the reference in distribution (one truncation coin per dropped token becomes a binomial
count of front drops; a shuffle of the candidates becomes a uniform subset), not in order. One seed gives
one corpus.
"""

from __future__ import annotations

import random
from bisect import bisect_left
from dataclasses import dataclass

import numpy as np

from bert.data.shards import Samples, concat_ranges
from bert.mlperf_rules import REFERENCE_PREP

PLAN_COLUMNS = 5  # a_start, a_end, b_start, b_end (offsets into the flat tokens), is_random_next


@dataclass(frozen=True)
class SampleSpec:
    max_seq_length: int = REFERENCE_PREP.max_seq_length
    max_predictions: int = REFERENCE_PREP.max_predictions_per_seq
    masked_lm_prob: float = REFERENCE_PREP.masked_lm_prob
    short_seq_prob: float = REFERENCE_PREP.short_seq_prob

    def masked_count(self, lengths: np.ndarray) -> np.ndarray:
        """How many positions the reference masks in instances of `lengths` tokens ([CLS] A [SEP] B [SEP]): 15%,
        rounded half to even, at least 1, at most max_predictions and the candidates (all but [CLS] and [SEP])."""
        lengths = np.asarray(lengths, dtype=np.int64)
        count = np.rint(lengths * self.masked_lm_prob).astype(np.int64)
        return np.minimum(np.clip(count, 1, self.max_predictions), np.maximum(lengths - 3, 0))

    def check(self) -> None:
        """Raises ValueError naming the option that is out of range."""
        if self.max_seq_length < 5:
            raise ValueError(f"max_seq_length {self.max_seq_length} is too short: [CLS] A [SEP] B [SEP] "
                             "needs at least 5 tokens")
        if self.max_predictions < 1:
            raise ValueError(f"max_predictions {self.max_predictions} must be at least 1")
        if not 0.0 < self.masked_lm_prob < 1.0:
            raise ValueError(f"masked_lm_prob {self.masked_lm_prob} must be between 0 and 1")
        if not 0.0 <= self.short_seq_prob <= 1.0:
            raise ValueError(f"short_seq_prob {self.short_seq_prob} must be between 0 and 1")


@dataclass(frozen=True)
class SpecialIds:
    cls: int
    sep: int
    mask: int
    vocab_size: int  # random replacements are drawn from ids [0, vocab_size)


@dataclass
class Documents:
    """Tokenised documents as flat arrays: sentence s is tokens[sentence_offsets[s]:sentence_offsets[s+1]],
    document d holds sentences document_offsets[d] to document_offsets[d+1]. No sentence is empty."""

    tokens: np.ndarray  # [T] int32
    sentence_offsets: np.ndarray  # [S+1] int64
    document_offsets: np.ndarray  # [D+1] int64

    def __len__(self) -> int:
        return len(self.document_offsets) - 1

    @staticmethod
    def from_lengths(tokens: np.ndarray, sentence_lengths: np.ndarray, document_sentences: np.ndarray
                     ) -> Documents:
        """Drops empty sentences, then documents left without sentences."""
        sentence_lengths = np.asarray(sentence_lengths, dtype=np.int64)
        document_of = np.repeat(np.arange(len(document_sentences)), document_sentences)
        kept = sentence_lengths > 0
        sentences_per_document = np.bincount(document_of[kept], minlength=len(document_sentences))
        sentences_per_document = sentences_per_document[sentences_per_document > 0]
        return Documents(np.asarray(tokens, dtype=np.int32), offsets_of(sentence_lengths[kept]),
                         offsets_of(sentences_per_document))

    @staticmethod
    def from_lists(documents: list[list[list[int]]]) -> Documents:
        sentences = [s for d in documents for s in d]
        tokens = np.fromiter((t for s in sentences for t in s), dtype=np.int32)
        return Documents.from_lengths(tokens, np.array([len(s) for s in sentences], dtype=np.int64),
                                      np.array([len(d) for d in documents], dtype=np.int64))


def offsets_of(lengths: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def plan_instances(documents: Documents, spec: SampleSpec, rng: random.Random, dupe_factor: int = 1
                   ) -> np.ndarray:
    """[N, 5] int64 rows (a_start, a_end, b_start, b_end, is_random_next), in document order."""
    if len(documents) < 2:
        raise ValueError("random next sentences need at least 2 documents")
    sent, docs = documents.sentence_offsets.tolist(), documents.document_offsets.tolist()
    max_tokens = spec.max_seq_length - 3
    plans: list[int] = []
    for _ in range(dupe_factor):
        for d in range(len(docs) - 1):
            target = max_tokens
            if rng.random() < spec.short_seq_prob:
                target = rng.randint(2, max_tokens)
            _plan_document(sent, docs, d, target, rng, plans)
    return np.array(plans, dtype=np.int64).reshape(-1, PLAN_COLUMNS)


def _plan_document(sent: list[int], docs: list[int], d: int, target: int, rng: random.Random,
                   plans: list[int]) -> None:
    first, end = docs[d], docs[d + 1]
    chunk, i = first, first  # the chunk holds sentences chunk..i
    while i < end:
        if i < end - 1 and sent[i + 1] - sent[chunk] < target:
            i += 1
            continue
        count = i + 1 - chunk
        a_end = chunk + (rng.randint(1, count - 1) if count >= 2 else 1)
        if count == 1 or rng.random() < 0.5:
            b_start, b_end = _random_next(sent, docs, d, max(1, target - (sent[a_end] - sent[chunk])), rng)
            plans += (sent[chunk], sent[a_end], b_start, b_end, 1)
            chunk = i = a_end  # the sentences that B did not use start the next chunk
        else:
            plans += (sent[chunk], sent[a_end], sent[a_end], sent[i + 1], 0)
            chunk = i = i + 1


def _random_next(sent: list[int], docs: list[int], d: int, want: int, rng: random.Random) -> tuple[int, int]:
    """Sentences of another document, from a random one on, until `want` tokens or the document's end."""
    other = d
    for _ in range(10):
        other = rng.randint(0, len(docs) - 2)
        if other != d:
            break
    start = rng.randint(docs[other], docs[other + 1] - 1)
    stop = bisect_left(sent, sent[start] + want, start + 1, docs[other + 1])
    return sent[start], sent[stop]


def truncated_lengths(a: np.ndarray, b: np.ndarray, max_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """The lengths the reference's truncation leaves: it drops from the longer segment (B on a tie) until the
    pair fits, so the longer first comes down to the shorter, then the two alternate, B first."""
    excess = np.maximum(a + b - max_tokens, 0)
    from_longer = np.minimum(excess, np.abs(a - b))
    rest = excess - from_longer
    a_longer = a > b
    a_cut = np.where(a_longer, from_longer, 0) + rest // 2
    b_cut = np.where(a_longer, 0, from_longer) + rest - rest // 2
    return a - a_cut, b - b_cut


def build_samples(tokens: np.ndarray, plans: np.ndarray, spec: SampleSpec, special: SpecialIds,
                  rng: np.random.Generator) -> Samples:
    """Truncates, assembles `[CLS] A [SEP] B [SEP]` and masks the planned instances, in the given order."""
    a_start, a_end, b_start, b_end, random_next = (plans[:, k] for k in range(PLAN_COLUMNS))
    a_len, b_len = truncated_lengths(a_end - a_start, b_end - b_start, spec.max_seq_length - 3)
    # Each dropped token came off the front or the back with a fair coin.
    a_start = a_start + rng.binomial(a_end - a_start - a_len, 0.5)
    b_start = b_start + rng.binomial(b_end - b_start - b_len, 0.5)
    assembled, segments, offsets = assemble_pairs(tokens, a_start, a_len, b_start, b_len, special)
    positions, labels = _mask(assembled, offsets, a_len, b_len, spec, special, rng)
    return Samples(assembled, segments, offsets, positions, labels, random_next.astype(np.int8))


def assemble_pairs(tokens: np.ndarray, a_start: np.ndarray, a_len: np.ndarray, b_start: np.ndarray,
                   b_len: np.ndarray, special: SpecialIds) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(tokens, segment ids, offsets) of `[CLS] A [SEP] B [SEP]` for runs A and B of the flat `tokens`."""
    n = len(a_start)
    cls_at, sep_at = len(tokens), len(tokens) + 1  # the two special ids, appended to the source
    one = np.ones(n, dtype=np.int64)
    starts = np.stack([np.full(n, cls_at), a_start, np.full(n, sep_at), b_start, np.full(n, sep_at)], 1)
    lengths = np.stack([one, a_len, one, b_len, one], 1)
    source = np.concatenate([tokens, np.array([special.cls, special.sep], dtype=tokens.dtype)])
    assembled = source[concat_ranges(starts.ravel(), lengths.ravel())].astype(np.int32)
    segments = np.repeat(np.tile(np.array([0, 0, 0, 1, 1], dtype=np.int8), n), lengths.ravel())
    return assembled, segments, offsets_of(a_len + b_len + 3)


def _mask(tokens: np.ndarray, offsets: np.ndarray, a_len: np.ndarray, b_len: np.ndarray, spec: SampleSpec,
          special: SpecialIds, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Masks `tokens` in place; returns (positions, original ids), [N, max_predictions], sorted, 0-padded."""
    n, width = len(a_len), spec.max_predictions
    candidates = a_len + b_len
    count = spec.masked_count(candidates + 3)
    # A uniform subset of `count` candidates: the candidates with the smallest random keys.
    keys = rng.random((n, int(candidates.max())), dtype=np.float32)
    keys[np.arange(keys.shape[1])[None, :] >= candidates[:, None]] = 2.0
    if keys.shape[1] > width:
        keys_part = np.argpartition(keys, width - 1, axis=1)[:, :width]
    else:
        keys_part = np.broadcast_to(np.arange(keys.shape[1]), (n, keys.shape[1]))
    ranked = np.take_along_axis(keys_part, np.argsort(np.take_along_axis(keys, keys_part, 1), axis=1), 1)
    chosen = np.arange(ranked.shape[1])[None, :] < count[:, None]
    # Candidate c is position c + 1 in segment A ([CLS] first), c + 2 in segment B (after A's [SEP]).
    position = np.where(ranked < a_len[:, None], ranked + 1, ranked + 2)
    position = np.sort(np.where(chosen, position, np.iinfo(np.int64).max), axis=1)[:, :width]
    chosen = np.arange(position.shape[1])[None, :] < count[:, None]
    rows, cols = np.nonzero(chosen)
    flat = offsets[rows] + position[rows, cols]
    labels = np.zeros((n, width), dtype=np.int32)
    positions = np.zeros((n, width), dtype=np.int32)
    labels[rows, cols] = tokens[flat]
    positions[rows, cols] = position[rows, cols]
    draw = rng.random(len(flat))
    replacement = np.where(draw < 0.8, special.mask, rng.integers(0, special.vocab_size, len(flat)))
    replace = (draw < 0.8) | (draw >= 0.9)  # the 10% in between keeps the original word
    tokens[flat[replace]] = replacement[replace]
    return positions, labels
