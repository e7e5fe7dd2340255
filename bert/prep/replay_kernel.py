"""The exact replay's two walks that must read the word stream word by word, in Python, and the whole replay
compiled from C.

Rejection sampling makes how many words an instance's candidate shuffle and its masking draws take depend on
the words; the Python functions below define these walks for the Python replay (exact_instances). The C
replay (`replay_kernel.c`) makes every draw of the same stream, which it generates as it goes, a block of
instances a call: dozens of times faster than the Python replay. When a C compiler (`cc`) is there it is
compiled once into the user's cache (~/.cache/mlperf-bert) and used through ctypes; without one the Python
replay runs. Tests run both and compare them.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import random
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from bert.prep.instances import Documents, SampleSpec, SpecialIds, offsets_of
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


class CompiledReplay:
    """One part's replay by the C library: its generator, the part's documents, and where the replay stands."""

    def __init__(self, library: ctypes.CDLL, documents: Documents, spec: SampleSpec, special: SpecialIds, seed: int,
                 masked_counts: list[int]):
        self._library = library
        # MT19937's 624 words and position as a freshly seeded random.Random holds them (its first draw twists),
        # then room for the outputs of a twist.
        self._state = np.zeros(2 * 624 + 1, dtype=np.uint32)
        self._state[:625] = random.Random(seed).getstate()[1]
        self._sent, self._docs = (np.ascontiguousarray(offsets, dtype=np.int64)
                                  for offsets in (documents.sentence_offsets, documents.document_offsets))
        self._count, self._spec, self._special = len(documents), spec, special
        self._width = spec.max_predictions
        self._masked_counts = np.array(masked_counts, dtype=np.int32)
        self._order = self.shuffled(self._count)  # the document at shuffled index d is _order[d]
        self._loop = np.array([0, 0, -1, 0, 0], dtype=np.int64)  # pass, document, chunk (-1: none yet), end, target

    @property
    def documents_done(self) -> int:
        return int(self._loop[0] * self._count + self._loop[1])

    def shuffled(self, n: int) -> np.ndarray:
        """The permutation `random.shuffle` gives `list(range(n))`, drawn next."""
        order = np.zeros(n, dtype=np.int64)
        self._library.shuffled(self._state.ctypes.data, n, order.ctypes.data)
        return order

    def instances(self, dupe_factor: int, capacity: int) -> tuple[np.ndarray, ...]:
        """Up to `capacity` more instances: (spans [n, 4], nsp [n], masked counts [n], masked positions, what each
        shows), the last two flat."""
        spans, nsp = np.zeros((capacity, 4), dtype=np.int64), np.zeros(capacity, dtype=np.int8)
        counts = np.zeros(capacity, dtype=np.int32)
        positions, shown = (np.zeros((capacity, self._width), dtype=np.int32) for _ in range(2))
        spec, special = self._spec, self._special
        made = self._library.replay_block(
            self._state.ctypes.data, self._loop.ctypes.data, self._sent.ctypes.data, self._docs.ctypes.data,
            self._order.ctypes.data, self._count, dupe_factor, spec.max_seq_length - 3, spec.short_seq_prob,
            self._masked_counts.ctypes.data, special.mask, KEEP, special.vocab_size, self._width, capacity,
            spans.ctypes.data, nsp.ctypes.data, counts.ctypes.data, positions.ctypes.data, shown.ctypes.data)
        if made < 0:
            raise MemoryError("the compiled replay could not have its scratch memory")
        listed = np.arange(self._width)[None, :] < counts[:made, None]
        return spans[:made], nsp[:made], counts[:made], positions[:made][listed], shown[:made][listed]


def compiled_samples(library: ctypes.CDLL, tokens: np.ndarray, spans: np.ndarray, mask_offsets: np.ndarray,
                     mask_positions: np.ndarray, replacements: np.ndarray, rows: np.ndarray, special: SpecialIds,
                     width: int) -> tuple[np.ndarray, ...]:
    """exact_instances.build_samples by the C library: (tokens, segments, offsets, masked positions, labels)."""
    arrays = [np.ascontiguousarray(a, dtype=t) for a, t in ((tokens, np.int32), (spans, np.int64),
                                                             (mask_offsets, np.int64), (mask_positions, np.int32),
                                                             (replacements, np.int32), (rows, np.int64))]
    if len(rows) and (mask_offsets[rows + 1] - mask_offsets[rows]).max() > width:  # this block's rows only
        raise ValueError(f"an instance has more masked positions than max_predictions {width}")
    lengths = arrays[1][arrays[5]][:, [1, 3]].sum(1) + 3  # [CLS] A [SEP] B [SEP]
    offsets = offsets_of(lengths)
    out = (np.empty(offsets[-1], dtype=np.int32), np.empty(offsets[-1], dtype=np.int8),
           np.zeros((len(rows), width), dtype=np.int32), np.zeros((len(rows), width), dtype=np.int32))
    library.build_samples(*(a.ctypes.data for a in arrays), len(rows), special.cls, special.sep, KEEP, width,
                          offsets.ctypes.data, *(a.ctypes.data for a in out))
    return out[0], out[1], offsets, out[2], out[3]


@functools.cache
def compiled_library() -> ctypes.CDLL | None:
    """The compiled replay, built on first use; None without a C compiler, or where it cannot be built or
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
    i64, ptr, i32 = ctypes.c_int64, ctypes.c_void_p, ctypes.c_int32
    lib.shuffled.argtypes = [ptr, i64, ptr]
    lib.shuffled.restype = None
    lib.replay_block.argtypes = [ptr, ptr, ptr, ptr, ptr, i64, i64, i64, ctypes.c_double, ptr, i32, i32,
                                 ctypes.c_uint32, i64, i64, ptr, ptr, ptr, ptr, ptr]
    lib.replay_block.restype = i64
    lib.build_samples.argtypes = [ptr, ptr, ptr, ptr, ptr, ptr, i64, i32, i32, i32, i64, ptr, ptr, ptr, ptr, ptr]
    lib.build_samples.restype = None
    return lib
