"""One shard's check, for `mlperf-bert data verify` (bert.prep.verify): the shard must open, hold the keys of its form
with integer dtypes and agreeing shapes (the header check of bert.data.shards; fixed form: an input_mask that is a
prefix of ones, zero padding), and every sample must be a reference sample: `[CLS] A [SEP] B [SEP]` with segment
ids 0 up to and including the first [SEP] and 1 after it, token ids inside the vocabulary, at least one masked
position, strictly increasing, inside the sequence and never on a [SEP] (0 ends the list, so never on [CLS]),
masked ids inside the vocabulary, next-sentence labels 0 or 1; optionally at most --max-seq-length tokens and
--max-predictions masked positions (the descriptor's limits). Problems are one line per kind, naming the file and
the first sample concerned; the statistics and every sample's fingerprint go to the dataset-wide checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bert.data.manifest import ManifestEntry
from bert.data.shards import Samples, ShardError, read_arrays, row_blocks, samples_from_arrays, shard_header
from bert.data.vocab import Vocab
from bert.prep.sample_hashes import sample_hashes
from bert.prep.vocab_fit import KIND_NAMES, count_kinds, piece_kinds

MIN_SAMPLE_TOKENS = 5  # [CLS] A [SEP] B [SEP] with one token in each segment
CHECK_BLOCK = 8192  # samples checked at a time: memory stays a small multiple of one block


@dataclass
class Stats:
    samples: int = 0
    length_counts: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))  # [length] -> count
    masked: int = 0
    candidates: int = 0  # tokens that are neither [CLS] nor [SEP]
    random_next: int = 0
    max_id: int = -1  # the largest token or masked id
    max_predictions: int = 0  # the most masked positions of a sample
    kinds: np.ndarray = field(default_factory=lambda: np.zeros(len(KIND_NAMES), dtype=np.int64))  # bert.prep.vocab_fit

    @property
    def max_length(self) -> int:
        return len(self.length_counts) - 1

    def add(self, other: Stats) -> None:
        width = max(len(self.length_counts), len(other.length_counts))
        self.length_counts = (np.pad(self.length_counts, (0, width - len(self.length_counts)))
                              + np.pad(other.length_counts, (0, width - len(other.length_counts))))
        self.samples += other.samples
        self.masked += other.masked
        self.candidates += other.candidates
        self.random_next += other.random_next
        self.max_id = max(self.max_id, other.max_id)
        self.max_predictions = max(self.max_predictions, other.max_predictions)
        self.kinds = self.kinds + other.kinds


@dataclass(frozen=True)
class Limits:
    """Limits every sample must keep, when given (a training descriptor's max_seq_length and
    max_predictions_per_seq)."""

    max_seq_length: int | None = None
    max_predictions: int | None = None


NO_LIMITS = Limits()  # a dataset checked for no descriptor in particular


@dataclass
class ShardCheck:
    """What checking one shard found."""

    form: str
    stats: Stats
    problems: list[str]
    hashes: np.ndarray  # every sample's fingerprint (bert.prep.sample_hashes), in order
    digest: str = ""  # bert.prep.duplicates.content_digest of the fingerprints
    entry: ManifestEntry | None = None


class Findings:
    """The problems of one shard: one line per kind, naming the first sample and counting the others."""

    def __init__(self, path: Path):
        self.path = path
        self.first: dict[str, int] = {}
        self.count: dict[str, int] = {}

    def flag(self, bad: np.ndarray, what: str, first_sample: int = 0) -> None:
        count = int(np.count_nonzero(bad))
        if count:
            self.first.setdefault(what, first_sample + int(np.argmax(bad)))
            self.count[what] = self.count.get(what, 0) + count

    def lines(self) -> list[str]:
        return [f"{self.path}: sample {self.first[what]}: {what}"
                + (f" (and {self.count[what] - 1} more sample(s))" if self.count[what] > 1 else "")
                for what in self.first]


def verify_shard(path: Path, vocab: Vocab, limits: Limits = NO_LIMITS, kinds: np.ndarray | None = None) -> ShardCheck:
    """Checks one shard, a block of samples at a time; `kinds` is piece_kinds(vocab), passed when known."""
    findings, stats, hashes = Findings(path), Stats(), []
    kinds = piece_kinds(vocab) if kinds is None else kinds
    try:
        header = shard_header(path)  # the file opens, has the keys, dtypes and shapes of its form
        for rows in row_blocks(header.samples, CHECK_BLOCK):
            form, arrays = read_arrays(path, rows)
            if form == "fixed" and not _padding_ok(findings, arrays, rows.start):
                continue  # a broken input_mask makes the samples of this block meaningless
            samples = samples_from_arrays(path, form, arrays)
            _check_samples(findings, samples, rows.start, vocab, limits)
            stats.add(_stats(samples, kinds))
            hashes.append(sample_hashes(samples))
    except ShardError as e:
        return ShardCheck("unreadable", Stats(), [str(e)], np.zeros(0, dtype=np.uint64))
    problems = [f"{path}: holds no samples"] if header.samples == 0 else []
    prints = np.concatenate(hashes) if hashes else np.zeros(0, dtype=np.uint64)
    return ShardCheck(header.form, stats, problems + findings.lines(), prints)


def _padding_ok(findings: Findings, arrays: dict[str, np.ndarray], first: int) -> bool:
    """The fixed form's padding: flags the samples whose input_mask or zero padding is broken; returns whether
    every input_mask is good."""
    ids, mask, seg = arrays["input_ids"], arrays["input_mask"], arrays["segment_ids"]
    bad_mask = ~np.isin(mask, (0, 1)).all(1) | (mask[:, 1:] > mask[:, :-1]).any(1)
    bad_padding = ((ids != 0) & (mask == 0)).any(1) | ((seg != 0) & (mask == 0)).any(1)
    findings.flag(bad_mask, "input_mask is not a run of 1s followed by 0s", first)
    findings.flag(bad_padding & ~bad_mask, "input_ids or segment_ids are not 0 where input_mask is 0", first)
    return not bad_mask.any()


def _stats(s: Samples, kinds: np.ndarray) -> Stats:
    lengths, listed = s.lengths, s.masked_positions > 0
    max_id = max(int(s.tokens.max(initial=-1)), int(s.masked_ids[listed].max(initial=-1)))
    return Stats(len(s), np.bincount(lengths), int(listed.sum()), int(lengths.sum() - 3 * len(s)),
                 int(s.nsp_labels.sum()), max_id, int(listed.sum(1).max(initial=0)), count_kinds(s, kinds))


def _check_samples(findings: Findings, s: Samples, first: int, vocab: Vocab, limits: Limits) -> None:
    def flag(bad: np.ndarray, what: str) -> None:
        findings.flag(bad, what, first)

    n, lengths, tokens = len(s), s.lengths, s.tokens
    row_of = np.repeat(np.arange(n), lengths)

    def any_token(bad_tokens: np.ndarray) -> np.ndarray:
        return np.bincount(row_of[bad_tokens], minlength=n) > 0

    short = lengths < MIN_SAMPLE_TOKENS
    flag(short, f"fewer than {MIN_SAMPLE_TOKENS} tokens, too few for [CLS] A [SEP] B [SEP]")
    if limits.max_seq_length is not None:
        flag(lengths > limits.max_seq_length, f"more than --max-seq-length {limits.max_seq_length} tokens")
    flag(any_token((tokens < 0) | (tokens >= len(vocab))), f"token id outside the vocabulary of {len(vocab)}")
    if short.any():  # the structure checks below need whole samples
        return
    starts, ends = s.offsets[:-1], s.offsets[1:] - 1
    flag((tokens[starts] != vocab.cls_id) | (tokens[ends] != vocab.sep_id), "does not start with [CLS] and "
         "end with [SEP]")
    # Segment ids: 0 for [CLS] A [SEP], then 1 for B [SEP]: one step up, none down, a [SEP] before the step.
    seg = s.segments.astype(np.int64)
    step = np.diff(seg, prepend=0)
    step[starts] = seg[starts]
    a_tokens = np.bincount(row_of, weights=seg == 0, minlength=n).astype(np.int64)
    a_ok = (a_tokens >= 3) & (a_tokens <= lengths - 2)
    flag(any_token((step < 0) | (step > 1)) | ~a_ok
         | (tokens[starts + np.clip(a_tokens - 1, 0, lengths - 1)] != vocab.sep_id),
         "segment_ids are not 0 through the first [SEP] and 1 after it")
    positions, listed = s.masked_positions.astype(np.int64), s.masked_positions > 0
    flag(listed.sum(1) == 0, "no masked position")
    if limits.max_predictions is not None:
        flag(listed.sum(1) > limits.max_predictions, f"more than --max-predictions {limits.max_predictions} "
             "masked positions")
    flag(((np.diff(positions, axis=1) <= 0) & listed[:, 1:]).any(1), "masked positions are not increasing")
    flag((listed & (positions >= lengths[:, None])).any(1), "a masked position points past the sequence")
    on_sep = (positions == (a_tokens - 1)[:, None]) | (positions == (lengths - 1)[:, None])
    flag((listed & on_sep).any(1), "a masked position points at [SEP]")
    flag((listed & ((s.masked_ids < 0) | (s.masked_ids >= len(vocab)))).any(1), "masked id outside the vocabulary")
    flag(~np.isin(s.nsp_labels, (0, 1)), "next_sentence_labels is not 0 or 1")
