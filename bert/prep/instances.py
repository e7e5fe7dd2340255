"""What both ways of making pre-training samples share (bert.prep.fast_instances, the reference's
distribution at array speed, and bert.prep.exact_instances, the reference's own samples): the sample shape
(SampleSpec, the reference's flags by default), the special ids, tokenised documents as flat arrays, and the
assembly of `[CLS] A [SEP] B [SEP]` from runs of tokens."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bert.data.shards import concat_ranges
from bert.mlperf_rules import REFERENCE_PREP


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
