"""Packing by rows: first-fit windows, capacities, and the agreement between ranks."""

from __future__ import annotations

import numpy as np
import pytest

from bert.data.balance import balance_strategy
from bert.data.row_packing import MAX_PER_ROW, agree, capacities, first_fit, taken
from bert.simulate.load_balance import named_lengths, simulate_balance


def _first_fit_into(lengths: list[int], rows: int, row_len: int) -> list[int]:
    """Plain first-fit into `rows` rows, skipping what does not fit: the indices it takes."""
    room, held, took = [row_len] * rows, [0] * rows, []
    for i, n in enumerate(lengths):
        row = next((r for r in range(rows) if room[r] >= n and held[r] < MAX_PER_ROW), None)
        if row is not None:
            room[row] -= n
            held[row] += 1
            took.append(i)
    return took


def test_first_fit_window_holds_what_first_fit_into_k_rows_takes():
    rng = np.random.default_rng(0)
    windows = rng.integers(1, 65, (40, 24))
    rows = first_fit(windows, 64)  # all windows at once, as the simulator runs it
    offers = capacities(rows, 10)
    for window, row, offer in zip(windows, rows, offers):
        for k in range(1, 11):
            assert np.flatnonzero(row < k).tolist() == _first_fit_into(window.tolist(), k, 64)
        assert offer.tolist() == [(row < k).sum() for k in range(1, 11)]
        for r in np.unique(row):  # no row over its tokens or its count
            assert window[row == r].sum() <= 64 and (row == r).sum() <= MAX_PER_ROW
    with pytest.raises(ValueError, match="does not fit a packed row"):
        first_fit(np.array([65]), 64)


def test_agreement_takes_the_fewest_rows_and_sums_to_the_global_batch():
    rng = np.random.default_rng(1)
    for _ in range(300):
        ranks, batch = int(rng.integers(1, 9)), int(rng.integers(1, 20))
        offers = np.sort(rng.integers(0, 3 * batch, (ranks, batch)), axis=1)
        offers[:, -1] = np.maximum(offers[:, -1], batch)  # batch rows always hold the batch
        rows, counts = agree(offers, ranks * batch)
        assert counts.sum() == ranks * batch and (0 <= counts).all() and (counts <= offers[:, rows - 1]).all()
        assert rows == 1 or offers[:, rows - 2].sum() < ranks * batch
        # The surplus comes off the largest offers: no rank gives up more than one below another's level.
        given_up = offers[:, rows - 1] - counts
        assert (counts[given_up > 0].min(initial=10**9) >= counts.max() - 1)
    rows, counts = agree(np.array([[3, 6], [1, 2]]), 4)
    assert rows == 1 and counts.tolist() == [3, 1]
    assert taken(np.array([0, 1, 0, 2, 0]), 2, 2).tolist() == [True, True, False, False, False]


def test_packed_rows_balance_rows_exactly_at_mlperf_scale():
    stats = simulate_balance(named_lengths("mlperf-wiki", count=50_000), 64, 8, 16, balance_strategy("packed", 512),
                             steps=6)
    assert stats.max_over_mean == 1.0  # every rank the same rows
    assert 1.8 < stats.sequences_per_row < 2.2 and stats.padding_waste < 0.1
