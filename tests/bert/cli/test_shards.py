"""The shard commands of `mlperf-bert data` (bert.cli.shards) as a user meets them: listed in the data group, each
turns shards into shards (eval-set, reshard, stratify) and says what it wrote, a missing input or an output inside
an input is one line, and stratify's bins are checked before anything is read."""

import numpy as np
from click.testing import CliRunner

from bert.cli import main
from bert.data.shards import read_shard

SHAPE = ("--max-seq-length", 64, "--max-predictions", 10)


def _run(*args):
    return CliRunner().invoke(main, ["data", *map(str, args)])


def test_the_shard_commands_are_commands_of_the_data_group():
    listing = _run("--help").output
    for name in ("eval-set", "import", "reshard", "stratify"):
        assert f"\n  {name} " in listing, listing


def test_each_command_writes_the_shards_it_says(small_dataset, tmp_path):
    shards = small_dataset / "train"
    picked = _run("eval-set", shards, "--out", tmp_path / "eval.hdf5", "--samples", 100, *SHAPE, "--quiet")
    assert picked.exit_code == 0 and picked.output == f"wrote 100 eval samples to {tmp_path / 'eval.hdf5'}\n"
    assert len(read_shard(tmp_path / "eval.hdf5")) == 100
    cut = _run("reshard", shards, "--out", tmp_path / "rs", "--shards", 3, *SHAPE, "--workers", 1, "--quiet")
    assert cut.exit_code == 0 and cut.output == f"wrote 3 shards to {tmp_path / 'rs'}\n"
    counts = [len(read_shard(p)) for p in sorted((tmp_path / "rs").glob("*.hdf5"))]
    assert sum(counts) == 2048 and max(counts) - min(counts) <= 1
    binned = _run("stratify", shards, "--out", tmp_path / "st", "--bins", "32,64", "--shards", 2, *SHAPE,
                  "--workers", 1, "--quiet")
    assert binned.exit_code == 0 and binned.output == f"wrote 4 shards in 2 bin folders under {tmp_path / 'st'}\n"
    short = np.concatenate([read_shard(p).lengths for p in (tmp_path / "st").glob("len-0001-0032/*.hdf5")])
    assert short.max() <= 32


def test_no_input_an_output_inside_an_input_and_bad_bins_are_one_line(small_dataset, tmp_path):
    none = _run("reshard", "--out", tmp_path / "rs", "--shards", 2)
    assert none.exit_code == 2 and "give at least one shard or folder of shards (SHARDS...)" in none.output
    inside = _run("eval-set", small_dataset, "--out", small_dataset / "eval2.hdf5", "--quiet")
    assert inside.exit_code == 1 and inside.output == (f"Error: {small_dataset / 'eval2.hdf5'}: lies inside the input "
                                                       f"{small_dataset}; write the output elsewhere\n")
    assert not (small_dataset / "eval2.hdf5").exists()
    bins = _run("stratify", small_dataset / "train", "--out", tmp_path / "st", "--bins", "64,32", "--shards", 2,
                *SHAPE, "--quiet")
    assert bins.exit_code == 2 and not (tmp_path / "st").exists()
    assert "Invalid value for --bins: [64, 32] must be positive, increasing upper edges" in bins.output
