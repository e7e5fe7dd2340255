"""The stratified sampler: fixed per-bin counts from the length mix, each sample at most once per epoch; and
the loader builds the batches the descriptor's strategy asks for."""

from __future__ import annotations

import numpy as np
import torch

from bert.data.balance_plans import bin_counts, bin_of, snake_deal
from bert.data.loader import LoaderBalance, TrainLoader
from bert.data.stratified_sampler import plan_from_shard, stratified_batches, stratified_plan
from tests.bert.data.test_packing import make_samples


def test_counts_follow_the_mix_and_the_paper_figure():
    assert bin_counts(np.array([6, 3, 2, 5]) / 16, 16).tolist() == [6, 3, 2, 5]
    assert bin_counts(np.array([0.37, 0.19, 0.13, 0.31]), 16).tolist() == [6, 3, 2, 5]
    counts = bin_counts(np.array([0.5, 0.3, 0.2]), 7)
    assert counts.sum() == 7 and counts.tolist() == [4, 2, 1]


def test_bins_too_rare_for_one_draw_merge_into_a_neighbour():
    lengths = np.array([10] * 90 + [50] * 9 + [100])  # the last bin holds 1%: no draw in a batch of 8
    plan = stratified_plan(lengths, [32, 64, 128], 8)
    assert plan.edges == (32, 128) and sum(plan.counts) == 8 and min(plan.counts) > 0


def test_snake_deal_gives_equal_counts_and_near_equal_tokens():
    lengths = np.random.default_rng(0).integers(1, 512, 128)
    seats = snake_deal(lengths, 8)
    assert np.bincount(seats).tolist() == [16] * 8
    totals = np.bincount(seats, lengths)
    assert totals.max() - totals.min() <= 512


def test_every_batch_draws_the_counts_and_no_sample_twice():
    rng = np.random.default_rng(1)
    shards = []
    for s in range(5):
        samples = make_samples(rng.integers(3, 65, 200).tolist(), seed=s)
        samples.tokens[samples.offsets[:-1]] = 1000 * (s + 1) + np.arange(200)  # unique ids
        shards.append((0, samples))
    plan = stratified_plan(shards[0][1].lengths, [16, 32, 48, 64], 16)
    seen, used = [], np.zeros(len(plan.edges), np.int64)
    for _, batch in stratified_batches(iter(shards), plan):
        assert len(batch) == 16
        drawn = np.bincount(bin_of(batch.lengths, plan.edges), minlength=len(plan.edges))
        assert drawn.tolist() == list(plan.counts)
        used += drawn
        seen.extend(batch.tokens[batch.offsets[:-1]].tolist())
    assert len(seen) == len(set(seen))  # once per epoch
    available = sum(np.bincount(bin_of(s.lengths, plan.edges), minlength=len(plan.edges)) for _, s in shards)
    assert ((available - used) < np.array(plan.counts)).any()  # batches stop only when a bin runs short


def _first_batches(dataset, balance: LoaderBalance, count: int = 3):
    paths = sorted((dataset / "train").glob("*.hdf5"))
    loader = TrainLoader(paths, 0, 1, 5, 16, torch.device("cpu"), prefetch=2, balance=balance)
    try:
        return [next(loader) for _ in range(count)], paths
    finally:
        loader.close()


def test_the_strategy_picks_the_loaders_batches(small_dataset):
    batches, paths = _first_batches(small_dataset, LoaderBalance("stratified", [16, 32, 48, 64], 64))
    plan = plan_from_shard(paths[0], [16, 32, 48, 64], 16)
    for batch in batches:
        lengths = (batch.layout.cu_seqlens[1:] - batch.layout.cu_seqlens[:-1]).numpy()
        assert np.bincount(bin_of(lengths, plan.edges), minlength=len(plan.edges)).tolist() == list(plan.counts)
    packed, _ = _first_batches(small_dataset, LoaderBalance("packed", None, 64))
    assert all(b.layout.packed and b.num_samples == 16 and b.input_ids.shape[1] == 64 for b in packed)
    plain, _ = _first_batches(small_dataset, LoaderBalance())
    assert not plain[0].layout.packed and plain[0].num_samples == 16


def test_stratify_writes_each_sample_once_into_its_bin_and_the_loader_reads_every_bin(small_dataset, tmp_path):
    from click.testing import CliRunner

    from bert.cli import main
    from bert.data.shards import read_shard
    from bert.data.stratified_sampler import binned_shards

    out = tmp_path / "strat"
    result = CliRunner().invoke(main, ["data", "stratify", "--input", str(small_dataset / "train"), "--out",
                                       str(out), "--bins", "48,63,64", "--shards", "2", "--max-seq-length", "64",
                                       "--max-predictions", "10", "--workers", "1", "--quiet"])
    assert result.exit_code == 0, result.output
    bins = binned_shards(sorted(out.glob("len-*/*.hdf5")))
    assert [edge for edge, _ in bins] == [48, 63, 64] and all(len(paths) == 2 for _, paths in bins)

    def key(s):  # a sample's identity: its tokens
        return [tuple(s.tokens[s.offsets[i]:s.offsets[i + 1]]) for i in range(len(s))]

    written, low = [], 0
    for edge, paths in bins:
        sizes = [len(read_shard(p)) for p in paths]
        assert max(sizes) - min(sizes) <= 1
        for p in paths:
            shard = read_shard(p)
            assert ((shard.lengths > low) & (shard.lengths <= edge)).all()
            written += key(shard)
        low = edge
    original = [k for p in sorted((small_dataset / "train").glob("*.hdf5")) for k in key(read_shard(p))]
    assert sorted(written) == sorted(original)

    again = CliRunner().invoke(main, ["data", "stratify", "--input", str(small_dataset / "train"), "--out",
                                      str(out), "--shards", "2", "--bins", "48,63,64", "--max-seq-length", "64"])
    assert again.exit_code != 0 and "--overwrite" in again.output

    paths = sorted(out.glob("len-*/*.hdf5"))
    loader = TrainLoader(paths, 0, 1, 5, 16, torch.device("cpu"), prefetch=2,
                         balance=LoaderBalance("stratified", None, 64))
    try:
        batch = next(loader)
    finally:
        loader.close()
    lengths = (batch.layout.cu_seqlens[1:] - batch.layout.cu_seqlens[:-1]).numpy()
    from bert.data.stratified_sampler import plan_from_bins
    plan = plan_from_bins(bins, 16)
    assert np.bincount(bin_of(lengths, plan.edges), minlength=3).tolist() == list(plan.counts)
