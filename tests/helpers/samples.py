"""Samples made in memory, of chosen lengths (bert.data.random_samples), and a mix of lengths the tests share."""

from __future__ import annotations

from bert.data.random_samples import random_samples as make_samples

__all__ = ["LENGTHS", "make_samples"]

LENGTHS = [30, 5, 12, 40, 9, 17, 3, 22]  # mixed lengths: 8 sequences that pack into fewer 48-token rows
