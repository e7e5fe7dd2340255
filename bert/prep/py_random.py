"""Python's `random.Random(seed)` replayed from its raw word stream, generated in bulk with numpy.

CPython's generator is MT19937; every method consumes its 32-bit outputs ("words") in a fixed way:
`random()` takes two words a, b and returns ((a >> 5) * 2**26 + (b >> 6)) / 2**53; `_randbelow(n)` (behind
`randint`, `randrange` and `shuffle`) takes k = n.bit_length() bits from the top of one word and draws
again while the result is >= n (so n = 2**j wastes half its words, and n = 1 still takes words);
`shuffle(x)` calls `_randbelow(i + 1)` for i from len(x) - 1 down to 1. numpy's MT19937 accepts Python's
state, so the same words come out of `random_raw` a million at a time; a replay that consumes them exactly
as those methods would gets exactly their results, and the rest of the program can work on whole arrays.

`WordWindow` holds a window of the stream as numpy arrays and as `array` objects (whose items index as
plain ints, for the few loops that must walk the stream word by word); `Cursor` is a position in it with the
scalar methods of `random.Random`.
"""

from __future__ import annotations

import math
import random
from array import array

import numpy as np

GENERATE = 1 << 20  # words generated at a time
RANDOM_SCALE = 1.0 / 9007199254740992.0  # 2**-53, as CPython's random() scales
RANDOM_HIGH = 67108864.0  # 2**26


class WordWindow:
    """Words [base, base + len) of the stream of `random.Random(seed)`, extended on demand."""

    def __init__(self, seed: int, top_bits: int = 16):
        key = random.Random(seed).getstate()[1]
        self._bits = np.random.MT19937()
        self._bits.state = {"bit_generator": "MT19937",
                            "state": {"key": np.array(key[:624], dtype=np.uint32), "pos": key[624]}}
        self.top_bits = top_bits
        self.base = 0
        self.words = np.zeros(0, dtype=np.uint32)
        self.scalar = array("I")  # the words, for word-by-word walks
        self.top = array("H")  # each word's top `top_bits` bits, enough for any _randbelow(n < 2**top_bits)

    @property
    def end(self) -> int:
        return self.base + len(self.words)

    def ensure(self, end: int) -> None:
        """Makes the window reach stream position `end` (exclusive)."""
        if end <= self.end:
            return
        count = max(GENERATE, end - self.end)
        fresh = self._bits.random_raw(count).astype(np.uint32)
        self.words = np.concatenate([self.words, fresh])
        self.scalar.frombytes(fresh.tobytes())
        self.top.frombytes((fresh >> (32 - self.top_bits)).astype(np.uint16).tobytes())

    def drop_before(self, position: int) -> None:
        """Forgets the words before stream position `position`."""
        cut = position - self.base
        if cut <= 0:
            return
        self.words = self.words[cut:].copy()
        del self.scalar[:cut]
        del self.top[:cut]
        self.base = position

    def randoms(self, positions: np.ndarray) -> np.ndarray:
        """`random()` as it would return starting at each position (relative to `base`; two words each)."""
        high = (self.words[positions] >> 5).astype(np.float64)
        low = (self.words[positions + 1] >> 6).astype(np.float64)
        return (high * RANDOM_HIGH + low) * RANDOM_SCALE


class Cursor:
    """A position in a `WordWindow` with the scalar methods of `random.Random`, for the stream's irregular
    parts. `pos` is relative to the window's base. Reading past the window raises IndexError."""

    def __init__(self, window: WordWindow, pos: int = 0):
        self.window, self.pos = window, pos

    def random(self) -> float:
        w, q = self.window.scalar, self.pos
        self.pos = q + 2
        return ((w[q] >> 5) * RANDOM_HIGH + (w[q + 1] >> 6)) * RANDOM_SCALE

    def randbelow(self, n: int) -> int:
        w, q, shift = self.window.scalar, self.pos, 32 - n.bit_length()
        r = w[q] >> shift
        while r >= n:
            q += 1
            r = w[q] >> shift
        self.pos = q + 1
        return r

    def randint(self, a: int, b: int) -> int:
        return a + self.randbelow(b - a + 1)

    def shuffled(self, n: int) -> np.ndarray:
        """The permutation `random.shuffle` gives `list(range(n))`."""
        order = list(range(n))
        for i in range(n - 1, 0, -1):
            j = self.randbelow(i + 1)
            order[i], order[j] = order[j], order[i]
        return np.array(order, dtype=np.int64)


def below_limits(n_max: int, top_bits: int) -> list[int]:
    """limits[n]: a word's top `top_bits` bits are below limits[n] exactly when `_randbelow(n)` accepts the
    word (it takes the top n.bit_length() bits and accepts them when below n)."""
    return [0] + [n << (top_bits - n.bit_length()) for n in range(1, n_max + 1)]


def random_cut(p: float) -> tuple[int, int]:
    """(lo, hi) for the test `random() < p` on the first of its two words w: w < lo means true, w >= hi
    means false, and only lo <= w < hi (one value of w >> 5) needs the second word."""
    # random() < p  <=>  (w >> 5) * 2**26 + (w' >> 6) < p * 2**53 (scaling by 2**53 is exact)
    high = math.ceil(p * 2.0**53) >> 26
    return high << 5, (high + 1) << 5
