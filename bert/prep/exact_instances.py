"""Pre-training instances exactly as the reference `create_pretraining_data.py` makes them, draw for draw.

The reference (google-research/bert without whole-word masking; the MLCommons copy) runs one
`random.Random(seed)` through: a shuffle of the documents; per dupe pass and document a target length
(`random() < short_seq_prob`, then `randint(2, max_len - 3)`); per chunk of sentences the A/B split
(`randint(1, n - 1)`), the random-next coin (`random() < 0.5`, skipped for a one-sentence chunk), up to ten
`randint` picks of another document and a `randint` start sentence; one `random() < 0.5` per token cut by the
truncation (front or back); a `shuffle` of the candidate positions; per masked position `random() < 0.8`
([MASK]), else `random() < 0.5` (kept), else `randint(0, len(vocab) - 1)` (a random word); and at the end a
`shuffle` of all instances. The same text, vocabulary and flags give the same stream, so replaying every
call in this order gives the same instances, masked positions, labels and replacements, in the same order.

The replay walks the stream (`py_random`) in two passes per block of instances. Pass 1 is the sequential
part in plain Python: it decides every data-dependent call and records where each instance's draws lie,
walking word by word only where rejection sampling makes the consumption depend on the words (the candidate
shuffle, whose `_randbelow` rejections are recorded, and the masking draws). Pass 2 turns the records into
arrays at once with numpy: truncation coins, the shuffle's accepted draws, the shuffled candidates (a
Fisher-Yates run in lockstep over the block), masked positions sorted as the reference sorts them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice

import numpy as np

from bert.data.shards import Samples, concat_ranges
from bert.prep.instances import Documents, SampleSpec, SpecialIds, assemble_pairs, offsets_of
from bert.prep.py_random import Cursor, WordWindow, below_limits, random_cut

BLOCK = 4096  # instances per pass 2
MARGIN = 1 << 16  # stream words kept ahead of pass 1 (a document that runs past them is replayed)
TOP_BITS = 16  # the candidate shuffle reads this many top bits of each word: sequences below 65,539 tokens
KEEP = -1  # replacement code: the masked position keeps its word


@dataclass
class ExactInstances:
    """The instances of one part: spans and masks in creation order, `order` the reference's final order."""

    spans: np.ndarray  # [N, 4] int64: A start, A length, B start, B length (offsets into the flat tokens)
    nsp: np.ndarray  # [N] int8: 1 = B is a random next sentence
    mask_offsets: np.ndarray  # [N + 1] int64: instance i's masked positions are [mask_offsets[i], [i + 1])
    mask_positions: np.ndarray  # [M] int32, increasing within an instance
    replacements: np.ndarray  # [M] int32: the id written at the position, or KEEP
    order: np.ndarray  # [N] int64: output row k is instance order[k]

    def __len__(self) -> int:
        return len(self.nsp)


def create_instances(documents: Documents, spec: SampleSpec, special: SpecialIds, seed: int,
                     dupe_factor: int, report: Callable[[float], None] | None = None) -> ExactInstances:
    """The reference's instances for one input file's documents (empty sentences and documents removed,
    in file order). `special.vocab_size` is the number of vocabulary words random replacements come from;
    `report` hears the share of the work done, document by document."""
    if spec.max_seq_length - 3 >= (1 << TOP_BITS):
        raise ValueError(f"max_seq_length {spec.max_seq_length} is too long for the exact replay "
                         f"(at most {(1 << TOP_BITS) + 2})")
    replay = _Replay(documents, spec, special, WordWindow(seed, TOP_BITS))
    return replay.run(dupe_factor, report or (lambda share: None))


class _Replay:
    def __init__(self, documents: Documents, spec: SampleSpec, special: SpecialIds, window: WordWindow):
        self.sent = documents.sentence_offsets.tolist()
        self.docs = documents.document_offsets.tolist()
        self.spec, self.special, self.window = spec, special, window
        self.max_tokens = spec.max_seq_length - 3
        limits = below_limits(self.max_tokens, TOP_BITS)
        self.descending = limits[:1:-1]  # limits for bounds max_tokens, ..., 2: a shuffle of C takes the tail
        self.cut_08, self.cut_05 = random_cut(0.8), random_cut(0.5)
        self.pos = 0  # pass 1's place in the window
        self.records = _Records()
        self.blocks: list[tuple[np.ndarray, ...]] = []

    def run(self, dupe_factor: int, report: Callable[[float], None]) -> ExactInstances:
        count = len(self.docs) - 1
        self.order = self._shuffled(count)  # the document at shuffled index d is self.order[d]
        for _ in range(dupe_factor):
            for d in range(count):
                self._document_with_retry(d)
                if len(self.records) >= BLOCK:
                    self._finish_block()
                report(1 / (dupe_factor * count))
        self._finish_block()
        final = self._shuffled(sum(len(b[1]) for b in self.blocks))
        spans, nsp, counts, positions, replacements = (np.concatenate(parts) for parts in zip(*self.blocks))
        return ExactInstances(spans, nsp, offsets_of(counts), positions, replacements, final)

    def _shuffled(self, n: int) -> np.ndarray:
        while True:
            self.window.ensure(self.window.base + self.pos + 2 * n + MARGIN)
            cursor = Cursor(self.window, self.pos)
            try:
                order = cursor.shuffled(n)
            except IndexError:  # more rejections than the margin allowed for: extend and replay
                self.window.ensure(self.window.end + 4 * n + MARGIN)
                continue
            self.pos = cursor.pos
            return order

    def _document_with_retry(self, d: int) -> None:
        while True:
            self.window.ensure(self.window.base + self.pos + MARGIN)
            mark, start = self.records.mark(), self.pos
            try:
                self._document(d)
                return
            except IndexError:  # the document's draws ran past the window: undo, extend and replay it
                self.records.undo(mark)
                self.pos = start
                self.window.ensure(self.window.end + MARGIN)

    def _document(self, d: int) -> None:
        sent, docs, cursor = self.sent, self.docs, Cursor(self.window, self.pos)
        first, end = docs[self.order[d]], docs[self.order[d] + 1]
        target = self.max_tokens
        if cursor.random() < self.spec.short_seq_prob:
            target = cursor.randint(2, self.max_tokens)
        chunk = first
        while chunk < end:
            # The chunk grows a sentence at a time until it holds `target` tokens or the document ends.
            last = min(bisect_left(sent, sent[chunk] + target, chunk + 1, end), end) - 1
            count = last + 1 - chunk
            a_end = chunk + (cursor.randint(1, count - 1) if count >= 2 else 1)
            if count == 1 or cursor.random() < 0.5:
                b_start, b_end = self._random_next(cursor, d, target - (sent[a_end] - sent[chunk]))
                self._instance(cursor, sent[chunk], sent[a_end], b_start, b_end, 1)
                chunk = a_end  # the sentences B did not take start the next chunk
            else:
                self._instance(cursor, sent[chunk], sent[a_end], sent[a_end], sent[last + 1], 0)
                chunk = last + 1
        self.pos = cursor.pos

    def _random_next(self, cursor: Cursor, d: int, want: int) -> tuple[int, int]:
        """Token offsets of B: sentences of another document, from a random one on, until `want` tokens."""
        count = len(self.docs) - 1
        for _ in range(10):
            other = cursor.randint(0, count - 1)
            if other != d:
                break
        first, end = self.docs[self.order[other]], self.docs[self.order[other] + 1]
        start = first + cursor.randint(0, end - first - 1)
        stop = bisect_left(self.sent, self.sent[start] + want, start + 1, end)
        return self.sent[start], self.sent[min(stop, end)]

    def _instance(self, cursor: Cursor, a_start: int, a_end: int, b_start: int, b_end: int, nsp: int) -> None:
        r = self.records
        a_len, b_len = a_end - a_start, b_end - b_start
        excess = max(0, a_len + b_len - self.max_tokens)
        r.pairs += (a_start, a_len, b_start, b_len, nsp, cursor.pos, excess)
        q = cursor.pos + 2 * excess  # one random() per truncated token
        candidates = min(a_len + b_len, self.max_tokens)
        r.shuffles += (q, candidates)
        # The candidate shuffle: _randbelow(n) for n = candidates .. 2, each drawing until a word's top bits
        # fall below the bound's limit; the rejected words are recorded for pass 2.
        top, rejected = self.window.top, r.rejected
        for limit in islice(self.descending, self.max_tokens - candidates, None):
            while top[q] >= limit:
                rejected.append(q)
                q += 1
            q += 1
        r.rejections.append(len(rejected))
        length = candidates + 3
        to_mask = min(self.spec.max_predictions, max(1, int(round(length * self.spec.masked_lm_prob))))
        cursor.pos = self._mask_draws(q, min(to_mask, candidates))

    def _mask_draws(self, q: int, count: int) -> int:
        """Records the replacement of each of `count` masked positions, in draw order; returns the position
        after the draws."""
        words, out = self.window.scalar, self.records.replacements
        (lo8, hi8), (lo5, hi5) = self.cut_08, self.cut_05
        mask_id, vocab_size = self.special.mask, self.special.vocab_size
        shift = 32 - vocab_size.bit_length()
        for _ in range(count):
            w = words[q]
            if w < lo8 or (w < hi8 and _random_at(words, q) < 0.8):
                out.append(mask_id)
                q += 2
                continue
            q += 2
            w = words[q]
            if w < lo5 or (w < hi5 and _random_at(words, q) < 0.5):
                out.append(KEEP)
                q += 2
                continue
            q += 2
            word = words[q] >> shift
            while word >= vocab_size:
                q += 1
                word = words[q] >> shift
            out.append(word)
            q += 1
        self.records.masked.append(len(out))
        return q

    def _finish_block(self) -> None:
        if len(self.records):
            self.blocks.append(_pass_two(self.records, self.window, self.max_tokens))
        self.records = _Records()
        base = self.window.base
        self.window.drop_before(base + self.pos)
        self.pos = 0


def _random_at(words, q: int) -> float:
    return ((words[q] >> 5) * 67108864.0 + (words[q + 1] >> 6)) * (1.0 / 9007199254740992.0)


class _Records:
    """Pass 1's notes for a block of instances (positions relative to the window's base)."""

    def __init__(self):
        self.pairs: list[int] = []  # per instance: A start, A length, B start, B length, nsp, coins, excess
        self.shuffles: list[int] = []  # per instance: first word of the shuffle, candidates
        self.rejected: list[int] = []  # every rejected word of the shuffles
        self.rejections: list[int] = []  # per instance: len(rejected) after its shuffle
        self.replacements: list[int] = []  # per masked position, in draw order
        self.masked: list[int] = []  # per instance: len(replacements) after its draws

    def __len__(self) -> int:
        return len(self.masked)

    def mark(self) -> tuple[int, ...]:
        return (len(self.pairs), len(self.shuffles), len(self.rejected), len(self.rejections),
                len(self.replacements), len(self.masked))

    def undo(self, mark: tuple[int, ...]) -> None:
        for values, length in zip((self.pairs, self.shuffles, self.rejected, self.rejections,
                                   self.replacements, self.masked), mark):
            del values[length:]


def _pass_two(r: _Records, window: WordWindow, max_tokens: int) -> tuple[np.ndarray, ...]:
    """(spans, nsp, masked counts, masked positions, replacements) of a block of recorded instances."""
    pairs = np.array(r.pairs, dtype=np.int64).reshape(-1, 7)
    a_start, a_len, b_start, b_len, nsp, coins, excess = pairs.T
    a_start, a_len, b_start, b_len = _truncate(window, a_start, a_len, b_start, b_len, coins, excess, max_tokens)
    shuffles = np.array(r.shuffles, dtype=np.int64).reshape(-1, 2)
    rejections = np.diff(np.array(r.rejections, dtype=np.int64), prepend=0)
    draws = _accepted_draws(window, shuffles[:, 0], shuffles[:, 1], rejections,
                            np.array(r.rejected, dtype=np.int64))
    counts = np.diff(np.array(r.masked, dtype=np.int64), prepend=0)
    chosen = _shuffled_prefix(draws, shuffles[:, 1], counts)
    # Candidate c is position c + 1 in A ([CLS] first), c + 2 in B (after A's [SEP]).
    owner = np.repeat(np.arange(len(counts)), counts)
    positions = np.where(chosen < a_len[owner], chosen + 1, chosen + 2)
    replacements = np.array(r.replacements, dtype=np.int32)
    order = np.lexsort((positions, owner))  # the reference sorts the masked positions of an instance
    spans = np.stack([a_start, a_len, b_start, b_len], 1)
    return spans, nsp.astype(np.int8), counts, positions[order].astype(np.int32), replacements[order]


def _truncate(window: WordWindow, a_start, a_len, b_start, b_len, coins, excess, max_tokens: int):
    """The reference's truncation: while too long, drop a token from the longer segment (B on a tie), from
    the front when its coin is below 0.5. The longer one comes down to the shorter first, then B, A, B..."""
    owner = np.repeat(np.arange(len(excess)), excess)
    step = np.arange(len(owner)) - np.repeat(offsets_of(excess)[:-1], excess)
    front = window.randoms(np.repeat(coins, excess) + 2 * step) < 0.5
    gap = np.minimum(excess, np.abs(a_len - b_len))
    on_a = np.where(step < gap[owner], (a_len > b_len)[owner], (step - gap[owner]) % 2 == 1)
    a_cut = np.bincount(owner, weights=on_a, minlength=len(excess)).astype(np.int64)
    a_front = np.bincount(owner, weights=on_a & front, minlength=len(excess)).astype(np.int64)
    b_front = np.bincount(owner, weights=~on_a & front, minlength=len(excess)).astype(np.int64)
    return a_start + a_front, a_len - a_cut, b_start + b_front, b_len - (excess - a_cut)


def _accepted_draws(window: WordWindow, first: np.ndarray, candidates: np.ndarray, rejections: np.ndarray,
                    rejected: np.ndarray) -> np.ndarray:
    """The values the candidate shuffles drew, per instance in draw order (bounds candidates .. 2)."""
    spans = candidates - 1 + rejections
    words = concat_ranges(first, spans)
    keep = np.ones(len(words), dtype=bool)
    owner = np.repeat(np.arange(len(first)), rejections)
    keep[rejected - first[owner] + offsets_of(spans)[:-1][owner]] = False
    accepted = words[keep]
    draws = candidates - 1
    bound = np.repeat(candidates, draws) - (np.arange(len(accepted)) - np.repeat(offsets_of(draws)[:-1], draws))
    bits = np.frexp(bound.astype(np.float64))[1]  # n.bit_length() for n >= 1
    return (window.words[accepted] >> (32 - bits).astype(np.uint32)).astype(np.int64)


def _shuffled_prefix(draws: np.ndarray, candidates: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The first counts[i] entries of `random.shuffle(list(range(candidates[i])))` given its draws, for all
    instances: Fisher-Yates in lockstep, the instances sorted by size so that each step works on a prefix."""
    by_size = np.argsort(-candidates, kind="stable")
    sizes = candidates[by_size]
    width = int(sizes[0])
    draws_at = offsets_of(candidates - 1)[:-1][by_size]  # where each sorted instance's draws begin
    table = np.tile(np.arange(width, dtype=np.int32), len(sizes))
    row = np.arange(len(sizes), dtype=np.int64) * width
    active = np.searchsorted(-sizes, -np.arange(2, width + 1), side="right")  # instances with size >= s + 2
    for step in range(width - 1):
        rows = int(active[step])
        i = row[:rows] + sizes[:rows] - 1 - step
        j = row[:rows] + draws[draws_at[:rows] + step]
        table[i], table[j] = table[j], table[i]
    prefix = np.arange(counts.max(initial=0))[None, :] < counts[by_size][:, None]
    picked = table.reshape(len(sizes), width)[:, :prefix.shape[1]][prefix]
    # Back to the instances' own order.
    return picked[np.argsort(np.repeat(by_size, counts[by_size]), kind="stable")].astype(np.int64)


def build_samples(tokens: np.ndarray, instances: ExactInstances, rows: np.ndarray, special: SpecialIds,
                  max_predictions: int) -> Samples:
    """The samples of instances `rows` (creation indices), in that order, masked as the reference masked
    them."""
    a_start, a_len, b_start, b_len = instances.spans[rows].T
    assembled, segments, offsets = assemble_pairs(tokens, a_start, a_len, b_start, b_len, special)
    counts = np.diff(instances.mask_offsets)[rows]
    picks = concat_ranges(instances.mask_offsets[rows], counts)
    owner = np.repeat(np.arange(len(rows)), counts)
    column = np.arange(len(picks)) - np.repeat(offsets_of(counts)[:-1], counts)
    where = offsets[owner] + instances.mask_positions[picks]
    positions = np.zeros((len(rows), max_predictions), dtype=np.int32)
    labels = np.zeros((len(rows), max_predictions), dtype=np.int32)
    positions[owner, column] = instances.mask_positions[picks]
    labels[owner, column] = assembled[where]
    shown = instances.replacements[picks]
    assembled[where[shown != KEEP]] = shown[shown != KEEP]
    return Samples(assembled, segments, offsets, positions, labels, instances.nsp[rows])
