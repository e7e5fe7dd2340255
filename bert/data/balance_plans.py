"""The load-balance plans, on sequence lengths alone: length bins, per-bin draw counts, the cost of a sequence and
the deals that spread a group's sequences over its ranks.

Both the training data path (bert.data.stratified_sampler, bert.distributed.presort, bert.data.row_packing) and
the load-balance simulator (bert.simulate.load_balance) call these, so the simulated figures describe the code
that runs. Everything here is numpy on the host, and every result depends on its inputs alone: the ranks of a
group that compute a deal from the same gathered lengths agree on it.
"""

from __future__ import annotations

import heapq

import numpy as np

from bert.data.balance import DEALS

PAPER_BINS = (128, 256, 384, 512)  # the seed paper's four bins: 1-128, 129-256, 257-384, 385-512


def attention_width(hidden_size: int) -> int:
    """Tokens of dense work that cost as much as one attention token pair: per token the encoder's dense
    layers do 12 h^2 and attention 2 h per pair, so 6 h (6,144 for BERT-large)."""
    return 6 * hidden_size


BERT_LARGE_ATTENTION_WIDTH = attention_width(1024)


def length_histogram(lengths: np.ndarray, max_len: int) -> np.ndarray:
    """[max_len + 1]: how many of `lengths` have each length 0 .. max_len."""
    return np.bincount(np.asarray(lengths, dtype=np.int64), minlength=max_len + 1)[:max_len + 1]


def quantile_bins(histogram: np.ndarray, count: int) -> list[int]:
    """Upper edges that split the lengths of `histogram` (length_histogram) into `count` bins of near-equal
    share. A length never spans two bins: one that holds more than a share gets a bin of its own (MLPerf's
    samples filled to the full length), and the other lengths share the bins that are left, by their own
    quantiles. The last edge is the histogram's longest length, len(histogram) - 1."""
    histogram = np.asarray(histogram, dtype=np.int64)
    max_len, total = len(histogram) - 1, int(histogram.sum())
    if count < 1 or total == 0:
        raise ValueError("quantile bins need a count of at least 1 and some lengths")
    heavy = np.flatnonzero(histogram * count > total)
    rest = histogram.copy()
    rest[heavy] = 0
    edges = [*heavy, *(heavy - 1)]
    if rest.sum():
        shares = max(1, count - round(histogram[heavy].sum() * count / total))
        cumulative = np.cumsum(rest)
        # The shortest length whose cumulative share reaches k/shares: the inverted empirical distribution.
        edges += list(np.searchsorted(cumulative, np.ceil(cumulative[-1] * np.arange(1, shares) / shares)))
    return sorted(set(int(e) for e in edges if 0 < e < max_len) | {max_len})


def bin_of(lengths: np.ndarray, edges: list[int] | tuple[int, ...]) -> np.ndarray:
    """The bin of each length: bin k holds lengths in (edges[k-1], edges[k]]; longer ones go to the last."""
    return np.minimum(np.searchsorted(np.asarray(edges), lengths, side="left"), len(edges) - 1)


def bin_counts(proportions: np.ndarray, batch: int) -> np.ndarray:
    """How many samples of each bin one batch of `batch` draws: `batch * proportions` rounded by largest
    remainder, so the counts add up to `batch` and follow the data's length mix (6/3/2/5 for 16 at the
    MLPerf mix)."""
    proportions = np.asarray(proportions, dtype=np.float64)
    if batch < 1 or proportions.sum() <= 0:
        raise ValueError("bin counts need a batch of at least 1 and a bin with samples")
    exact = batch * proportions / proportions.sum()
    counts = np.floor(exact).astype(np.int64)
    short = batch - int(counts.sum())
    # Largest remainders first; ties go to the lower bin, so every rank computes the same counts.
    order = np.lexsort((np.arange(len(exact)), -(exact - counts)))
    counts[order[:short]] += 1
    return counts


def sequence_cost(lengths: np.ndarray, attention_width: int) -> np.ndarray:
    """The work of each sequence in units of 1/attention_width token: its tokens times attention_width (the
    dense layers) plus its squared length (attention). Whole numbers, so that every rank adds them up to the
    same totals. attention_width = 6 h for hidden size h (6,144 for BERT-large)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    return lengths * int(attention_width) + lengths * lengths


def snake_deal(costs: np.ndarray, groups: int) -> np.ndarray:
    """The receiving group of each sequence: sorted largest first and dealt in snake order (0..g-1, g-1..0,
    ...), so that the groups' totals end up near-equal. With len(costs) a multiple of `groups`, every group
    receives the same number of sequences. Ties keep the input order, so every rank agrees."""
    order = np.argsort(-np.asarray(costs), kind="stable")
    turn = np.arange(len(order))
    lap, seat = np.divmod(turn, groups)
    dealt = np.where(lap % 2 == 0, seat, groups - 1 - seat)
    receiver = np.empty(len(order), dtype=np.int64)
    receiver[order] = dealt
    return receiver


def balanced_deal(costs: np.ndarray, groups: int) -> np.ndarray:
    """The receiving group of each sequence, every group receiving len(costs) / groups of them, with totals
    closer to equal than the snake deal's: the balanced largest differencing method (Karmarkar-Karp with
    equal cardinality). The sorted costs are cut into laps of `groups`, each lap a partial deal of one
    sequence per group; the two partial deals whose totals spread the most are merged, the heaviest group of
    one taking the lightest of the other, until one deal remains. Ties are broken by creation order, so every
    rank that computes it from the same costs agrees."""
    costs = np.asarray(costs, dtype=np.int64)
    if len(costs) % groups:
        raise ValueError(f"{len(costs)} sequences cannot be dealt equally to {groups} groups")
    order = np.argsort(-costs, kind="stable")
    laps = order.reshape(-1, groups)  # each row: one sequence for each group, largest first
    heap = []
    for index, members in enumerate(laps):
        totals = costs[members]
        heap.append((-(int(totals[0]) - int(totals[-1])), index, totals, members[:, None]))
    heapq.heapify(heap)
    created = len(heap)
    while len(heap) > 1:
        _, _, totals_a, members_a = heapq.heappop(heap)
        _, _, totals_b, members_b = heapq.heappop(heap)
        # Both are sorted heaviest first: pair the heaviest of one with the lightest of the other.
        totals = totals_a + totals_b[::-1]
        members = np.concatenate([members_a, members_b[::-1]], axis=1)
        rank = np.argsort(-totals, kind="stable")
        totals, members = totals[rank], members[rank]
        heapq.heappush(heap, (-(int(totals[0]) - int(totals[-1])), created, totals, members))
        created += 1
    receiver = np.empty(len(costs), dtype=np.int64)
    receiver[heap[0][3]] = np.arange(groups)[:, None]
    return receiver


def deal(costs: np.ndarray, groups: int, how: str) -> np.ndarray:
    """The receiving group of each sequence by the named deal (run.presort_deal)."""
    if how == "balanced":
        return balanced_deal(costs, groups)
    if how == "snake":
        return snake_deal(costs, groups)
    raise ValueError(f"unknown deal {how!r}; choose one of {', '.join(DEALS)}")
