"""Uncased BERT tokenisation equal to the reference `FullTokenizer(vocab, do_lower_case=True)`, piece for piece.

`WordPieceTokenizer(vocab).encode(sentences)` returns every sentence's word-piece ids concatenated (int32) and
the number of ids of each sentence; `folded(sentence)` is the sentence as the reference's BasicTokenizer sees
it before splitting it into words. A vocabulary with a repeated line is refused (`check_unique_pieces`).
The reference's steps, how they run on whole sentences here, and why the `tokenizers` library is not used:
docs/data.md, "How `prepare` replays the reference".
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections import Counter
from collections.abc import Callable

import numpy as np

from bert.data.vocab import Vocab, VocabError

MAX_WORD_CHARS = 200  # a longer word is [UNK]
_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
        (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def _is_punctuation(char: str) -> bool:
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _cleaning(char: str) -> str | None:
    """What the reference's cleaning and CJK spacing make of one character (None: itself)."""
    category = unicodedata.category(char)
    if char in " \t\n\r" or category == "Zs":
        return " "
    if char in "\x00\ufffd" or category in ("Cc", "Cf"):
        return ""
    if any(lo <= ord(char) <= hi for lo, hi in _CJK):
        return f" {char} "
    return None


class _Cleaning(dict):
    """A `str.translate` table of the cleaning step, filled in as new characters turn up."""

    def __init__(self):
        super().__init__()
        self.seen: set[str] = set()

    def learn(self, text: str) -> None:
        for char in set(text) - self.seen:
            self.seen.add(char)
            mapped = _cleaning(char)
            if mapped is not None:
                self[ord(char)] = mapped


class _Splitting:
    """Accent stripping (a `str.translate` table deleting Mn characters) and the word pattern: runs of
    characters that are neither whitespace nor punctuation, or one punctuation character. Both grow as new
    characters turn up."""

    def __init__(self):
        self.marks: dict[int, None] = {}
        self.punctuation = {chr(c) for c in range(128) if chr(c).isprintable() and _is_punctuation(chr(c))}
        self.seen = {chr(c) for c in range(128)}
        self.pattern = self._compile()

    def _compile(self) -> re.Pattern:
        group = "".join(re.escape(c) for c in sorted(self.punctuation))
        # A newline ends a sentence (sentences are split together); \s is the whitespace of str.split.
        return re.compile(rf"\n|[^\s{group}]+|[{group}]")

    def learn(self, text: str) -> None:
        fresh = set(text) - self.seen
        self.seen |= fresh
        self.marks.update((ord(c), None) for c in fresh if unicodedata.category(c) == "Mn")
        punctuation = {c for c in fresh if _is_punctuation(c)}
        if punctuation:
            self.punctuation |= punctuation
            self.pattern = self._compile()


def check_unique_pieces(vocab: Vocab) -> None:
    """The two reference scripts number a repeated vocabulary line differently (google-research keeps the
    last line number, MLCommons the first and renumbers the rest), so an exact dataset needs unique lines."""
    if len(vocab.ids) != len(vocab):
        piece = next(p for p, n in Counter(vocab.pieces).items() if n > 1)
        lines = [i + 1 for i, p in enumerate(vocab.pieces) if p == piece]
        raise VocabError(f"{vocab.path or 'the vocabulary'}: {piece!r} is on lines {lines}; every word piece "
                         "must be on one line only")


class _Made(dict):
    """A cache: a key's value is made (by `make`) the first time the key is looked up."""

    def __init__(self, make: Callable[[str], tuple[int, ...]], known: dict[str, tuple[int, ...]]):
        super().__init__(known)
        self.make = make

    def __missing__(self, key: str) -> tuple[int, ...]:
        value = self[key] = self.make(key)
        return value


class WordPieceTokenizer:
    """Sentences -> word-piece ids, as the reference's FullTokenizer(do_lower_case=True)."""

    def __init__(self, vocab: Vocab):
        vocab.check_special_tokens()
        check_unique_pieces(vocab)
        self.vocab = vocab
        self._unk = vocab.id_of("[UNK]")
        ids = vocab.ids
        self._starts = {p: i for p, i in ids.items() if not p.startswith("##")}
        self._continuations = {p[2:]: i for p, i in ids.items() if p.startswith("##")}
        # No piece is longer than this (without its "##"): longer candidates need not be looked up.
        self._longest = max(len(p) - 2 * p.startswith("##") for p in vocab.pieces)
        # A word (a run of letters, or a punctuation character): its ids; a sentence's end: -1.
        self._words = _Made(self._spell, {"\n": (-1,)})
        self._cleaning, self._splitting = _Cleaning(), _Splitting()

    def _spell(self, word: str) -> tuple[int, ...]:
        """Greedy longest-match-first WordPiece: the longest piece that starts the word, then the longest
        continuation ("##" piece) that starts the rest, and so on; [UNK] when none fits."""
        if len(word) > MAX_WORD_CHARS:
            return (self._unk,)
        pieces, start, table = [], 0, self._starts
        while start < len(word):
            for end in range(min(len(word), start + self._longest), start, -1):
                piece = table.get(word[start:end])
                if piece is not None:
                    break
            else:
                return (self._unk,)
            pieces.append(piece)
            start, table = end, self._continuations
        return tuple(pieces)

    def folded(self, sentence: str) -> str:
        """The sentence as the reference's BasicTokenizer sees it before splitting it into words. A sentence of
        printable ASCII needs only lowercasing; any other is cleaned, lowercased, decomposed (NFD) and stripped
        of nonspacing marks as a whole: lowercasing and NFD stop at whitespace (neither cased nor
        case-ignorable, and a starter), so this equals doing them word by word as the reference does."""
        if sentence.isascii() and sentence.isprintable():
            return sentence.lower()
        self._cleaning.learn(sentence)
        folded = unicodedata.normalize("NFD", sentence.translate(self._cleaning).lower())
        self._splitting.learn(folded)
        return folded.translate(self._splitting.marks)

    def encode(self, sentences: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(all ids concatenated as int32, the number of ids of each sentence); a sentence without a word
        has none. The folded sentences are split into words in one pass, each ending with a newline, whose id
        -1 marks the sentence's end; a word is spelt the first time it turns up."""
        text = "".join(self.folded(s) + "\n" for s in sentences)
        words = self._splitting.pattern.findall(text)
        ids = np.fromiter(itertools.chain.from_iterable(map(self._words.__getitem__, words)), dtype=np.int32)
        pieces = ids >= 0
        return ids[pieces], np.diff(np.flatnonzero(~pieces), prepend=-1) - 1
