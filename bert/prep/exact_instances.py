"""Pre-training instances exactly as the reference `create_pretraining_data.py` makes them, draw for draw.

`create_instances(documents, spec, special, seed, dupe_factor)` returns one part's `ExactInstances` (each
instance's A and B spans into the flat tokens, its next-sentence label, masked positions and replacements, and
the reference's final order); `build_samples` turns a block of them into `Samples`. It runs compiled
(`replay_kernel.c`) where a C compiler is found, else here in Python and numpy, which define it and give the same
arrays. The reference's stream of draws and the two passes that replay it: docs/data.md, "How `prepare`
replays the reference".
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bert.data.shards import Samples, concat_ranges
from bert.prep.instances import Documents, SampleSpec, SpecialIds, assemble_pairs, offsets_of
from bert.prep.py_random import Cursor, WordWindow, below_limits
from bert.prep.replay_kernel import (
    KEEP,
    CompiledReplay,
    compiled_library,
    compiled_samples,
    instance_draws_python,
)

BLOCK = 1024  # instances per pass 2 (the stream window holds about this many instances' words)
COMPILED_BLOCK = 4096  # instances per call of the compiled replay
MARGIN = 1 << 16  # stream words kept ahead of pass 1 (a document that runs past them is replayed)
TOP_BITS = 16  # the candidate shuffle reads this many top bits of each word: sequences below 65,539 tokens


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
    library = compiled_library()
    if library is not None:
        return _compiled_replay(library, documents, spec, special, seed, dupe_factor, report or (lambda share: None))
    return _Replay(documents, spec, special, seed).run(dupe_factor, report or (lambda share: None))


def masked_counts(spec: SampleSpec) -> list[int]:
    """counts[c]: how many of an instance's c candidates (its tokens but [CLS] and [SEP]) the reference masks."""
    return spec.masked_count(np.arange(spec.max_seq_length - 2) + 3).tolist()


def _compiled_replay(library, documents: Documents, spec: SampleSpec, special: SpecialIds, seed: int,
                     dupe_factor: int, report: Callable[[float], None]) -> ExactInstances:
    """The replay by the C library: the same instances as _Replay's."""
    replay = CompiledReplay(library, documents, spec, special, seed, masked_counts(spec))
    total, blocks = dupe_factor * len(documents), []
    while replay.documents_done < total:
        done = replay.documents_done
        blocks.append(replay.instances(dupe_factor, COMPILED_BLOCK))
        report((replay.documents_done - done) / total)
    spans, nsp, counts, positions, replacements = (np.concatenate(parts) for parts in zip(*blocks))
    return ExactInstances(spans, nsp, offsets_of(counts), positions, replacements, replay.shuffled(len(nsp)))


class _Replay:
    def __init__(self, documents: Documents, spec: SampleSpec, special: SpecialIds, seed: int):
        self.sent = documents.sentence_offsets.tolist()
        self.docs = documents.document_offsets.tolist()
        self.spec, self.special = spec, special
        self.max_tokens = spec.max_seq_length - 3
        self.limits = below_limits(self.max_tokens, TOP_BITS)
        self.masked = masked_counts(spec)
        self.window = WordWindow(seed, TOP_BITS)
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
            except IndexError:  # the document's draws ran past the window: undo, extend (doubling) and replay it
                self.records.undo(mark)
                self.pos = start
                self.window.ensure(self.window.end + max(MARGIN, len(self.window.words) - start))

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
        q, chosen, shown = instance_draws_python(self.window, q, self.limits, candidates, self.masked[candidates],
                                                 self.special.mask, self.special.vocab_size)
        r.chosen += chosen
        r.replacements += shown
        r.masked.append(len(r.replacements))
        cursor.pos = q

    def _finish_block(self) -> None:
        if len(self.records):
            self.blocks.append(_pass_two(self.records, self.window, self.max_tokens))
        self.records = _Records()
        base = self.window.base
        self.window.drop_before(base + self.pos)
        self.pos = 0


class _Records:
    """Pass 1's notes for a block of instances (positions relative to the window's base)."""

    def __init__(self):
        self.pairs: list[int] = []  # per instance: A start, A length, B start, B length, nsp, coins, excess
        self.chosen: list[int] = []  # per masked position, in draw order: the candidate (0 = A's first token)
        self.replacements: list[int] = []  # per masked position, in draw order: the id it shows, or KEEP
        self.masked: list[int] = []  # per instance: len(replacements) after its draws

    def __len__(self) -> int:
        return len(self.masked)

    def mark(self) -> tuple[int, ...]:
        return len(self.pairs), len(self.chosen), len(self.replacements), len(self.masked)

    def undo(self, mark: tuple[int, ...]) -> None:
        for values, length in zip((self.pairs, self.chosen, self.replacements, self.masked), mark):
            del values[length:]


def _pass_two(r: _Records, window: WordWindow, max_tokens: int) -> tuple[np.ndarray, ...]:
    """(spans, nsp, masked counts, masked positions, replacements) of a block of recorded instances."""
    pairs = np.array(r.pairs, dtype=np.int64).reshape(-1, 7)
    a_start, a_len, b_start, b_len, nsp, coins, excess = pairs.T
    a_start, a_len, b_start, b_len = _truncate(window, a_start, a_len, b_start, b_len, coins, excess, max_tokens)
    counts = np.diff(np.array(r.masked, dtype=np.int64), prepend=0)
    chosen = np.array(r.chosen, dtype=np.int64)
    # Candidate c is position c + 1 in A ([CLS] first), c + 2 in B (after A's [SEP]).
    owner = np.repeat(np.arange(len(counts)), counts)
    positions = np.where(chosen < a_len[owner], chosen + 1, chosen + 2)
    replacements = np.array(r.replacements, dtype=np.int32)
    order = np.argsort(owner * (max_tokens + 3) + positions)  # the reference sorts an instance's positions
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


def build_samples(tokens: np.ndarray, instances: ExactInstances, rows: np.ndarray, special: SpecialIds,
                  max_predictions: int) -> Samples:
    """The samples of instances `rows` (creation indices), in that order, masked as the reference masked
    them (by the C library when it is there)."""
    library = compiled_library()
    if library is not None:
        tokens, segments, offsets, positions, labels = compiled_samples(
            library, tokens, instances.spans, instances.mask_offsets, instances.mask_positions,
            instances.replacements, rows, special, max_predictions)
        return Samples(tokens, segments, offsets, positions, labels, instances.nsp[rows])
    a_start, a_len, b_start, b_len = instances.spans[rows].T
    assembled, segments, offsets = assemble_pairs(tokens, a_start, a_len, b_start, b_len, special)
    counts = instances.mask_offsets[rows + 1] - instances.mask_offsets[rows]  # this block's rows only
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
