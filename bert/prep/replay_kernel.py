"""The two walks of the exact replay that must read the word stream word by word, because rejection sampling
makes how many words they take depend on the words: an instance's candidate shuffle and its masking draws.

The Python functions below define them. `replay_kernel.c` does the same; when a C compiler (`cc`) is there it
is compiled once into the user's cache (~/.cache/mlperf-bert) and used through ctypes, which makes these
walks many times faster; without a compiler the Python functions run. Tests run both on the same stream and
compare them.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from bert.prep.py_random import WordWindow, random_cut

KEEP = -1  # replacement code: the masked position keeps its word
_SOURCE = Path(__file__).with_name("replay_kernel.c")
_CUT_08, _CUT_05 = random_cut(0.8), random_cut(0.5)


def shuffle_prefix_python(window: WordWindow, q: int, limits: list[int], candidates: int, keep: int
                          ) -> tuple[int, list[int]]:
    """`random.shuffle(list(range(candidates)))` from window position q: (the position after it, the first
    `keep` entries). `limits[n]` is the bound below which a word's top 16 bits are accepted by
    `_randbelow(n)` (py_random.below_limits)."""
    top, order = window.top, list(range(candidates))
    for n in range(candidates, 1, -1):
        limit = limits[n]
        while top[q] >= limit:
            q += 1
        j = top[q] >> (16 - n.bit_length())
        q += 1
        order[n - 1], order[j] = order[j], order[n - 1]
    return q, order[:keep]


def mask_draws_python(window: WordWindow, q: int, count: int, mask_id: int, vocab_size: int) -> tuple[int, list[int]]:
    """The draws of `count` masked positions from window position q: (the position after them, per position
    mask_id, KEEP or the random word)."""
    words, out = window.scalar, []
    (lo8, hi8), (lo5, hi5) = _CUT_08, _CUT_05
    shift = 32 - vocab_size.bit_length()
    for _ in range(count):
        w = words[q]
        if w < lo8 or (w < hi8 and _random_at(words, q) < 0.8):
            out.append(mask_id)
            q += 2
            continue
        w = words[q + 2]
        if w < lo5 or (w < hi5 and _random_at(words, q + 2) < 0.5):
            out.append(KEEP)
            q += 4
            continue
        q += 4
        word = words[q] >> shift
        while word >= vocab_size:
            q += 1
            word = words[q] >> shift
        out.append(word)
        q += 1
    return q, out


def _random_at(words, q: int) -> float:
    return ((words[q] >> 5) * 67108864.0 + (words[q + 1] >> 6)) * (1.0 / 9007199254740992.0)


def instance_draws_python(window: WordWindow, q: int, limits: list[int], candidates: int, keep: int, mask_id: int,
                          vocab_size: int) -> tuple[int, list[int], list[int]]:
    """One instance's walks: (the position after them, the first `keep` candidates of the shuffle, what each
    of them shows)."""
    q, chosen = shuffle_prefix_python(window, q, limits, candidates, keep)
    q, shown = mask_draws_python(window, q, keep, mask_id, vocab_size)
    return q, chosen, shown


class CompiledWalks:
    """The C walks, on one window; the same results as the Python functions, IndexError past the window."""

    def __init__(self, library: ctypes.CDLL, max_candidates: int, limits: list[int]):
        self._draws = library.instance_draws
        limits_array = np.array(limits, dtype=np.uint16)
        shifts = np.array([0] + [16 - n.bit_length() for n in range(1, len(limits))], dtype=np.int32)
        size = max(max_candidates, 1)
        self._order, self._chosen, self._shown = (np.zeros(size, dtype=np.int32) for _ in range(3))
        self._keep = (limits_array, shifts)  # the buffers behind the pointers below
        self._fixed = [a.ctypes.data for a in (limits_array, shifts, self._order, self._chosen, self._shown)]
        self._window: tuple = ()  # (words array, top16 array, their pointers): they move when the window does

    def instance_draws(self, window: WordWindow, q: int, candidates: int, keep: int, mask_id: int, vocab_size: int
                       ) -> tuple[int, list[int], list[int]]:
        if not self._window or self._window[0] is not window.words or self._window[1] is not window.top16:
            self._window = (window.words, window.top16, window.words.ctypes.data, window.top16.ctypes.data)
        limits, shifts, order, chosen, shown = self._fixed
        end = self._draws(self._window[3], self._window[2], q, len(window.words), limits, shifts, candidates, keep,
                          mask_id, KEEP, vocab_size, order, chosen, shown)
        if end < 0:
            raise IndexError("the draws run past the window")
        return end, self._chosen[:keep].tolist(), self._shown[:keep].tolist()


def compiled_library() -> ctypes.CDLL | None:
    """The compiled walks, built on first use; None without a C compiler, or where they cannot be built or
    loaded (no home folder, a read-only or noexec cache)."""
    if shutil.which("cc") is None:
        return None
    source = _SOURCE.read_bytes()
    try:
        cache = Path.home() / ".cache" / "mlperf-bert"
        library = cache / f"replay_kernel-{hashlib.sha256(source).hexdigest()[:16]}.so"
        if not library.is_file():
            cache.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=cache) as tmp:
                built = Path(tmp) / library.name
                subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(built), str(_SOURCE)], check=True,
                               capture_output=True, timeout=120)
                os.replace(built, library)
        lib = ctypes.CDLL(str(library))
    except (OSError, RuntimeError, subprocess.SubprocessError):
        return None
    long, ptr, i32 = ctypes.c_long, ctypes.c_void_p, ctypes.c_int32
    lib.instance_draws.argtypes = [ptr, ptr, long, long, ptr, ptr, long, long, i32, i32, ctypes.c_uint32, ptr, ptr, ptr]
    lib.instance_draws.restype = long
    return lib
