"""The fast sampler (`data prepare --fast`, the synthetic corpora): pre-training samples with the reference
`create_pretraining_data` semantics in distribution, not draw for draw, at array speed.

`plan_instances(documents, spec, rng, dupe_factor)` returns [N, 5] rows (A start, A end, B start, B end into the
flat tokens, is-random-next); `build_samples(tokens, plans, spec, special, rng)` truncates, assembles
`[CLS] A [SEP] B [SEP]` and masks them into `Samples`. One seed gives one corpus. What the reference draws and
which draws are replaced by which: docs/data.md, "How `prepare` replays the reference".
"""

from __future__ import annotations

import random
from bisect import bisect_left

import numpy as np

from bert.data.shards import Samples
from bert.prep.instances import Documents, SampleSpec, SpecialIds, assemble_pairs

PLAN_COLUMNS = 5  # a_start, a_end, b_start, b_end (offsets into the flat tokens), is_random_next


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
