"""The training loader (bert.data.loader): it builds the batches the descriptor's strategy asks for, and refuses
length-bin shard sets without a stratified strategy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bert.data.balance import balance_strategy
from bert.data.balance_plans import bin_of
from bert.data.loader import LoaderBalance, TrainLoader
from bert.data.stratified_sampler import plan_from_shard

WIDTH = 6 * 128  # attention width of a hidden size of 128


def _first_batches(dataset, balance: LoaderBalance, count: int = 3):
    paths = sorted((dataset / "train").glob("*.hdf5"))
    loader = TrainLoader(paths, 0, 1, 5, 16, torch.device("cpu"), prefetch=2, balance=balance)
    try:
        return [next(loader) for _ in range(count)], paths
    finally:
        loader.close()


def test_the_strategy_picks_the_loaders_batches(small_dataset):
    batches, paths = _first_batches(small_dataset, LoaderBalance(balance_strategy("stratified", 64), [16, 32, 48, 64]))
    plan = plan_from_shard(paths[0], [16, 32, 48, 64], 16, 64, WIDTH, 0)
    for batch in batches:
        lengths = (batch.layout.cu_seqlens[1:] - batch.layout.cu_seqlens[:-1]).numpy()
        assert np.bincount(bin_of(lengths, plan.edges), minlength=len(plan.edges)).tolist() == list(plan.counts)
    packed, _ = _first_batches(small_dataset, LoaderBalance(balance_strategy("packed", 64)))
    assert all(b.layout.packed and b.num_samples == 16 and b.input_ids.shape[1] == 64 for b in packed)
    plain, _ = _first_batches(small_dataset, LoaderBalance(balance_strategy("none", 64)))
    assert not plain[0].layout.packed and plain[0].num_samples == 16


def test_length_bin_shard_sets_need_a_stratified_strategy(tmp_path):
    paths = [tmp_path / "len-064" / "part-0.hdf5"]  # refused before any shard is read
    for name in ("none", "packed"):
        with pytest.raises(ValueError, match=f"length-bin shard sets are read by a stratified strategy, not '{name}'"):
            TrainLoader(paths, 0, 1, 5, 16, torch.device("cpu"), balance=LoaderBalance(balance_strategy(name, 64)),
                        bins=[(64, paths)])


def test_the_strategy_and_its_row_length_come_from_the_caller():
    """No default strategy, so no default row length: it is the run's max_seq_length (Descriptor.balance)."""
    with pytest.raises(TypeError, match="strategy"):
        LoaderBalance()
    with pytest.raises(TypeError, match="balance"):
        TrainLoader([], 0, 1, 5, 16, torch.device("cpu"))
