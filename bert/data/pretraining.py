"""Pre-training samples from documents, with the reference `create_pretraining_data` semantics.

A document is a list of sentences; a sentence is a list of word-piece ids. From each document the reference
cuts chunks up to a target length (shorter with probability `short_seq_prob`), splits a chunk into segment A
and B (B replaced by text from another document half of the time: the next-sentence label), truncates the
longer segment from a random end, writes `[CLS] A [SEP] B [SEP]`, and masks word pieces: round(15% of the
sequence), at least 1, at most `max_predictions`; 80% [MASK], 10% unchanged, 10% a random vocabulary word.
The random draws happen in the reference's order, so one seed gives one corpus.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from bert.data.shards import Samples

Document = list[list[int]]


@dataclass(frozen=True)
class SampleSpec:
    max_seq_length: int = 512
    max_predictions: int = 76
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1


@dataclass(frozen=True)
class SpecialIds:
    cls: int
    sep: int
    mask: int
    vocab_size: int  # random replacements are drawn from ids [0, vocab_size)


@dataclass
class Instance:
    tokens: list[int]
    segment_ids: list[int]
    masked_positions: list[int]
    masked_labels: list[int]
    is_random_next: bool


def truncate_pair(a: list[int], b: list[int], max_tokens: int, rng: random.Random) -> None:
    """Drops tokens from the longer segment, at a random end each time, until the pair fits."""
    while len(a) + len(b) > max_tokens:
        longer = a if len(a) > len(b) else b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


def mask_tokens(tokens: list[int], spec: SampleSpec, special: SpecialIds, rng: random.Random
                ) -> tuple[list[int], list[int], list[int]]:
    """Returns (masked tokens, sorted masked positions, original ids at those positions)."""
    candidates = [i for i, t in enumerate(tokens) if t != special.cls and t != special.sep]
    rng.shuffle(candidates)
    count = min(spec.max_predictions, max(1, int(round(len(tokens) * spec.masked_lm_prob))))
    output = list(tokens)
    chosen = sorted(candidates[:count])
    # The reference draws the replacement for each position in shuffled order; keep that order.
    for i in candidates[:count]:
        if rng.random() < 0.8:
            output[i] = special.mask
        elif rng.random() >= 0.5:
            output[i] = rng.randint(0, special.vocab_size - 1)
    return output, chosen, [tokens[i] for i in chosen]


def _random_next(documents: list[Document], index: int, target: int, rng: random.Random) -> list[int]:
    other = index
    for _ in range(10):
        other = rng.randint(0, len(documents) - 1)
        if other != index:
            break
    document = documents[other]
    tokens: list[int] = []
    for sentence in document[rng.randint(0, len(document) - 1):]:
        tokens.extend(sentence)
        if len(tokens) >= target:
            break
    return tokens


def instances_from_document(documents: list[Document], index: int, spec: SampleSpec,
                            special: SpecialIds, rng: random.Random) -> list[Instance]:
    document = documents[index]
    max_tokens = spec.max_seq_length - 3
    target = max_tokens
    if rng.random() < spec.short_seq_prob:
        target = rng.randint(2, max_tokens)
    instances: list[Instance] = []
    chunk: list[list[int]] = []
    chunk_len = 0
    i = 0
    while i < len(document):
        chunk.append(document[i])
        chunk_len += len(document[i])
        if i == len(document) - 1 or chunk_len >= target:
            a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
            a = [t for s in chunk[:a_end] for t in s]
            is_random_next = len(chunk) == 1 or rng.random() < 0.5
            if is_random_next:
                b = _random_next(documents, index, target - len(a), rng)
                i -= len(chunk) - a_end  # the unused sentences start the next chunk
            else:
                b = [t for s in chunk[a_end:] for t in s]
            truncate_pair(a, b, max_tokens, rng)
            if a and b:
                tokens = [special.cls, *a, special.sep, *b, special.sep]
                segments = [0] * (len(a) + 2) + [1] * (len(b) + 1)
                masked, positions, labels = mask_tokens(tokens, spec, special, rng)
                instances.append(Instance(masked, segments, positions, labels, is_random_next))
            chunk, chunk_len = [], 0
        i += 1
    return instances


def instances_to_samples(instances: list[Instance], max_predictions: int) -> Samples:
    n = len(instances)
    lengths = np.fromiter((len(x.tokens) for x in instances), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    positions = np.zeros((n, max_predictions), dtype=np.int32)
    labels = np.zeros((n, max_predictions), dtype=np.int32)
    for row, x in enumerate(instances):
        positions[row, : len(x.masked_positions)] = x.masked_positions
        labels[row, : len(x.masked_labels)] = x.masked_labels
    return Samples(
        np.fromiter((t for x in instances for t in x.tokens), dtype=np.int32, count=int(offsets[-1])),
        np.fromiter((s for x in instances for s in x.segment_ids), dtype=np.int8, count=int(offsets[-1])),
        offsets, positions, labels,
        np.fromiter((x.is_random_next for x in instances), dtype=np.int8, count=n),
    )
