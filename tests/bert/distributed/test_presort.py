"""Presorting over gloo ranks: every rank gets its share, no sample is lost or duplicated, and the token
totals of a group's ranks end up near-equal; per node of the launch shape, or over all ranks."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import torch.distributed as dist

from bert.data.balance import balance_strategy
from bert.distributed.presort import build_exchange, decode, encode, presort_groups
from tests.helpers.samples import make_samples

BATCH, ROW_LEN, PREDICTIONS = 6, 64, 4


def _my_samples(rank: int):
    rng = np.random.default_rng(rank)
    samples = make_samples(rng.integers(2, ROW_LEN + 1, BATCH).tolist(), seed=rank, predictions=PREDICTIONS)
    samples.tokens[samples.offsets[:-1]] = 10_000 + rank * 100 + np.arange(BATCH)  # a unique [CLS] id each
    return samples


def presort_worker(rank: int, world_size: int, ranks_per_node: int, name: str) -> None:
    strategy = balance_strategy(name, ROW_LEN)
    exchange = build_exchange(rank, world_size, ranks_per_node, strategy, PREDICTIONS, timeout_s=30)
    sent = _my_samples(rank)
    got = exchange.share(sent)
    assert len(exchange.share(sent)) == BATCH
    ids = got.tokens[got.offsets[:-1]].tolist()
    everyone = [None] * world_size
    dist.all_gather_object(everyone, (ids, int(got.lengths.sum()), got.tokens.tolist()))
    for members in presort_groups(world_size, ranks_per_node, strategy):
        given = sorted(i for r in members for i in _my_samples(r).tokens[_my_samples(r).offsets[:-1]].tolist())
        received = [i for r in members for i in everyone[r][0]]
        assert all(len(everyone[r][0]) == BATCH for r in members)  # every rank its share
        assert sorted(received) == given  # nothing lost, nothing duplicated, nothing from another group
        totals = [everyone[r][1] for r in members]
        assert max(totals) - min(totals) <= ROW_LEN  # snake dealing: within one sequence of each other
    # A sample arrives whole: its tokens are those its owner sent.
    owner, index = divmod(ids[0] - 10_000, 100)
    original = _my_samples(owner)
    assert got.tokens[:got.offsets[1]].tolist() == original.tokens[original.offsets[index]:
                                                                   original.offsets[index + 1]].tolist()


def both_worker(rank: int, world_size: int) -> None:
    presort_worker(rank, world_size, 2, "stratified+local_presort")
    presort_worker(rank, world_size, 2, "global_presort")


def test_local_presort_on_a_two_node_split_of_four_processes_and_global_presort(spawn_ranks):
    # One spawn for both (starting processes dominates the time); 2 ranks exchange in tests/bert/test_train.py.
    spawn_ranks(both_worker, 4)


def test_groups_follow_the_launch_shape():
    assert presort_groups(8, 4, balance_strategy("stratified+local_presort", ROW_LEN)) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert presort_groups(4, 2, balance_strategy("global_presort", ROW_LEN)) == [[0, 1, 2, 3]]
    assert presort_groups(4, 2, balance_strategy("stratified", ROW_LEN)) == []
    assert presort_groups(4, 2, balance_strategy("packed", ROW_LEN)) == []  # packing agrees on rows, not a presort


def test_encode_decode_round_trip():
    samples = make_samples([5, 64, 17], predictions=PREDICTIONS)
    back = decode(encode(samples, ROW_LEN, PREDICTIONS), ROW_LEN, PREDICTIONS)
    for name in ("tokens", "segments", "offsets", "masked_positions", "masked_ids", "nsp_labels"):
        assert np.array_equal(getattr(back, name), getattr(samples, name)), name


def test_presort_groups_wait_the_descriptors_timeout_not_torchs(monkeypatch):
    created = []
    monkeypatch.setattr(dist, "new_group", lambda members, **kwargs: created.append((members, kwargs)))
    build_exchange(5, 8, 4, balance_strategy("stratified+local_presort", ROW_LEN), PREDICTIONS, timeout_s=7.5)
    assert [members for members, _ in created] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert all(kwargs == {"backend": "gloo", "timeout": timedelta(seconds=7.5)} for _, kwargs in created)
