"""`data stratify` (bert.prep.stratify): every sample written once into the shards of its length bin, which the
stratified loader reads."""

import numpy as np
import pytest
import torch

from bert.data.balance import balance_strategy
from bert.data.balance_plans import bin_of
from bert.data.loader import LoaderBalance, TrainLoader

WIDTH = 6 * 128  # attention width of a hidden size of 128


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
    with pytest.raises(ValueError, match="read by a stratified strategy, not 'none'"):
        TrainLoader(paths, 0, 1, 5, 16, torch.device("cpu"), LoaderBalance(balance_strategy("none", 64)),
                    bins=binned_shards(paths))
    loader = TrainLoader(paths, 0, 1, 5, 16, torch.device("cpu"), prefetch=2,
                         balance=LoaderBalance(balance_strategy("stratified", 64)), bins=binned_shards(paths))
    try:
        batch = next(loader)
    finally:
        loader.close()
    lengths = (batch.layout.cu_seqlens[1:] - batch.layout.cu_seqlens[:-1]).numpy()
    from bert.data.stratified_sampler import plan_from_bins
    plan = plan_from_bins(bins, 16, WIDTH, 0)
    assert np.bincount(bin_of(lengths, plan.edges), minlength=3).tolist() == list(plan.counts)


def test_stratify_picks_the_inputs_length_quantiles_by_default(small_dataset, tmp_path):
    from bert.data.balance_plans import length_histogram, quantile_bins
    from bert.data.shards import read_shard
    from bert.data.stratified_sampler import binned_shards
    from bert.prep.reshard import OutputShape
    from bert.prep.stratify import stratify

    inputs = sorted((small_dataset / "train").glob("*.hdf5"))
    lengths = np.concatenate([read_shard(p).lengths for p in inputs])
    written = stratify(inputs, tmp_path / "strat", None, 1, 5, workers=1, show_progress=False, bin_count=4,
                       shape=OutputShape("fixed", 64, 10))
    bins = binned_shards(written)
    assert [edge for edge, _ in bins] == quantile_bins(length_histogram(lengths, 64), 4)
    sizes = np.array([len(read_shard(paths[0])) for _, paths in bins])
    assert sizes.sum() == len(lengths)
    assert bins[-1][0] == 64 and bins[-2][0] == 63 and sizes[-1] == (lengths == 64).sum()  # the full length: its own
