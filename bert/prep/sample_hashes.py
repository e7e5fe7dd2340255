"""A 64-bit fingerprint of each sample, the same in both shard forms: what the duplicate checks compare.

A sample's fingerprint covers everything training sees of it: its token ids and segment ids in order, its masked
positions and their labels, its next-sentence label and its length. It is a sum of those values, each weighted
by a fixed odd 64-bit coefficient of its place (modulo 2**64), passed through MurmurHash3's 64-bit finaliser
(a bijection) to spread the bits. Two samples that differ in one value collide with probability about 2**-63
for a random choice of coefficients, so among the 156.7M samples of the MLPerf set a false match is expected
about once in a thousand datasets. Vectorised over a block of samples: a few array passes per token, no
Python per sample.
"""

from __future__ import annotations

import numpy as np

from bert.data.shards import Samples

_U64 = np.uint64
# Salts of the coefficient streams: one per kind of value, so that a token never weighs like a masked label.
_TOKEN_SALT, _MASKED_SALT, _SCALAR_SALT = 0x9E3779B97F4A7C15, 0xD1B54A32D192ED03, 0x8CB92BA72F3D8DD7


def _mix(x: np.ndarray) -> np.ndarray:
    """MurmurHash3's fmix64 on uint64 (wrapping arithmetic): a bijection that spreads every bit."""
    x = x ^ (x >> _U64(33))
    x = x * _U64(0xFF51AFD7ED558CCD)
    x = x ^ (x >> _U64(33))
    x = x * _U64(0xC4CEB9FE1A85EC53)
    return x ^ (x >> _U64(33))


def _coefficients(count: int, salt: int) -> np.ndarray:
    """`count` fixed odd 64-bit weights, the same prefix whatever the count."""
    with np.errstate(over="ignore"):
        return _mix(np.arange(count, dtype=_U64) + _U64(salt)) | _U64(1)


def sample_hashes(s: Samples) -> np.ndarray:
    """The fingerprint of every sample of `s` (uint64 [N])."""
    lengths = s.lengths
    n, longest = len(s), int(lengths.max(initial=0))
    place = np.arange(len(s.tokens), dtype=np.int64) - np.repeat(s.offsets[:-1], lengths)
    # (token, segment) as one value; +1 so that a token 0 still counts. Negative ids wrap, which is still exact.
    values = ((s.tokens.astype(np.int64).astype(_U64) << _U64(1)) | s.segments.astype(_U64)) + _U64(1)
    with np.errstate(over="ignore"):
        weighted = values * _coefficients(max(longest, 1), _TOKEN_SALT)[place]
        running = np.zeros(len(weighted) + 1, dtype=_U64)
        np.cumsum(weighted, out=running[1:])
        total = running[s.offsets[1:]] - running[s.offsets[:-1]]
        # A masked pair (position, label) as one value; the 0s after the list (and a wider padding) weigh nothing.
        masked = ((s.masked_positions.astype(np.int64).astype(_U64) << _U64(32))
                  | s.masked_ids.astype(np.int64).astype(_U64) & _U64(0xFFFFFFFF))
        total += (masked * _coefficients(masked.shape[1], _MASKED_SALT)[None, :]).sum(1, dtype=_U64)
        scalar = _coefficients(2, _SCALAR_SALT)
        total += (s.nsp_labels.astype(np.int64).astype(_U64) + _U64(1)) * scalar[0]
        total += lengths.astype(_U64) * scalar[1]
        return _mix(total) if n else np.zeros(0, dtype=_U64)
