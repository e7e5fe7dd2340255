"""Spreading data work over processes (bert.prep.worker_pool). The in-process path is tested here; the spawned
workers run in tests/bert/prep/test_prepare.py (same bytes with any worker count, a worker's error)."""

import pytest

from bert.prep.worker_pool import run_parallel


def _square(item: int, report) -> int:
    report(1)
    if item < 0:
        raise ValueError(f"item {item} is negative")
    return item * item


def test_results_come_in_the_order_of_the_items_through_keep_with_progress():
    done, kept = [], []
    results = run_parallel(_square, [3, 1, 2], 1, done.append, keep=lambda i, r: kept.append(i) or r + 1)
    assert results == [10, 2, 5] and kept == [0, 1, 2] and done == [1, 1, 1]


def test_an_error_in_an_item_is_raised_to_the_caller():
    with pytest.raises(ValueError, match="item -2 is negative"):
        run_parallel(_square, [1, -2, 3], 1, lambda amount: None)
