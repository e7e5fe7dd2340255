from collections import Counter

import numpy as np
import pytest

from bert.data.shards import Samples, ShardError, read_shard
from bert.prep.reshard import Buckets, OutputShape, deal, near_equal_sizes, pick_eval_set, reshard
from bert.prep.shard_writer import write_shard
from tests.helpers.processes import gone_pid

SHAPE = OutputShape(max_seq_length=64, max_predictions=10)


def _keys(samples: Samples) -> Counter:
    """Each sample as bytes (tokens, segments, masked lists, label): a multiset to compare datasets with."""
    return Counter(samples.tokens[samples.offsets[i]: samples.offsets[i + 1]].tobytes()
                   + samples.segments[samples.offsets[i]: samples.offsets[i + 1]].tobytes()
                   + samples.masked_positions[i].tobytes() + samples.masked_ids[i].tobytes()
                   + bytes([samples.nsp_labels[i]]) for i in range(len(samples)))


def _inputs(small_dataset):
    return sorted((small_dataset / "train").glob("*.hdf5"))


@pytest.mark.parametrize("read_block", [16384, 100])
def test_every_sample_lands_in_exactly_one_shard_of_near_equal_size(small_dataset, tmp_path, monkeypatch,
                                                                    read_block):
    monkeypatch.setattr("bert.prep.reshard.READ_BLOCK", read_block)  # 100: inputs are read in pieces
    inputs = _inputs(small_dataset)
    stale = tmp_path / "scratch" / f".mlperf-bert-buckets.tmp{gone_pid()}"  # from a killed run
    (stale / "bucket-000000.npy").parent.mkdir(parents=True)
    written = reshard(inputs, tmp_path / "out", 7, seed=1, shape=SHAPE, tmp_dir=tmp_path / "scratch",
                      show_progress=False)
    outputs = [read_shard(p) for p in written]
    assert [p.name for p in written] == [f"part-0000{k}-of-00007.hdf5" for k in range(7)]
    assert max(map(len, outputs)) - min(map(len, outputs)) <= 1
    assert _keys(Samples.concat(outputs)) == _keys(Samples.concat([read_shard(p) for p in inputs]))
    assert not list((tmp_path / "scratch").iterdir())  # the temporary buckets are gone, stale ones too


def test_the_shuffle_mixes_the_inputs_and_follows_the_seed_alone(small_dataset, tmp_path):
    inputs = _inputs(small_dataset)
    origin = {key: i for i, p in enumerate(inputs) for key in _keys(read_shard(p))}
    runs = {}
    for name, seed, workers in (("a", 3, 1), ("b", 3, 2), ("c", 4, 1)):
        runs[name] = reshard(inputs, tmp_path / name, 2, seed=seed, shape=SHAPE, workers=workers,
                             show_progress=False)
    first = read_shard(runs["a"][0])
    sources = Counter(origin[key] for key in _keys(first))
    assert all(abs(sources[i] / len(first) - 0.25) < 0.05 for i in range(4))  # a quarter from each input
    assert [p.read_bytes() for p in runs["a"]] == [p.read_bytes() for p in runs["b"]]
    assert runs["a"][0].read_bytes() != runs["c"][0].read_bytes()


def test_dealing_is_exact_for_any_block_sizes(tmp_path):
    rng = np.random.default_rng(0)
    sizes = near_equal_sizes(103, 5)
    assert sizes.tolist() == [21, 21, 21, 20, 20]
    buckets = Buckets(tmp_path / "buckets", 5)
    lacking = sizes.copy()
    tokens = np.arange(103 * 5, dtype=np.int32) % 1000
    block = Samples(tokens, np.zeros(len(tokens), np.int8), np.arange(0, 103 * 5 + 1, 5),
                    np.ones((103, 3), np.int32), np.arange(103 * 3, dtype=np.int32).reshape(103, 3),
                    np.zeros(103, np.int8))
    for first, last in ((0, 1), (1, 40), (40, 103)):
        deal(block.take(np.arange(first, last)), lacking, buckets, rng)
    assert lacking.tolist() == [0] * 5
    back = [buckets.read(k, 4) for k in range(5)]
    assert [len(b) for b in back] == sizes.tolist() and back[0].max_predictions == 4
    assert sorted(np.concatenate([b.masked_ids[:, 0] for b in back]).tolist()) == list(range(0, 309, 3))
    buckets.remove()
    assert not (tmp_path / "buckets").exists()


def test_varlen_input_to_fixed_output(small_dataset, tmp_path):
    inputs = _inputs(small_dataset)
    (tmp_path / "varlen").mkdir()
    for p in inputs:
        write_shard(tmp_path / "varlen" / p.name, read_shard(p), "varlen", 64, 10)
    written = reshard(sorted((tmp_path / "varlen").iterdir()), tmp_path / "out", 3, seed=0, shape=SHAPE,
                      show_progress=False)
    assert _keys(Samples.concat([read_shard(p) for p in written])) == _keys(
        Samples.concat([read_shard(p) for p in inputs]))


def test_refusals(small_dataset, tmp_path):
    inputs = _inputs(small_dataset)
    reshard(inputs, tmp_path / "out", 2, seed=0, shape=SHAPE, show_progress=False)
    with pytest.raises(FileExistsError, match=r"out: already holds 2 file\(s\) that `mlperf-bert data reshard` "
                                              r"wrote .* pass --overwrite"):
        reshard(inputs, tmp_path / "out", 2, seed=0, shape=SHAPE, show_progress=False)
    with pytest.raises(FileExistsError, match="an input lies inside the output folder"):
        reshard(sorted((tmp_path / "out").glob("*.hdf5")), tmp_path, 2, seed=0, overwrite=True, show_progress=False)
    with pytest.raises(ShardError, match=r"part-00000-of-00004\.hdf5: holds samples of 64 tokens, more than "
                                         r"--max-seq-length 32"):
        reshard(inputs, tmp_path / "short", 2, seed=0, shape=OutputShape(max_seq_length=32, max_predictions=10),
                show_progress=False)
    assert not list((tmp_path / "short").glob("*.hdf5")) and not list((tmp_path / "short").glob(".*.tmp*"))
    with pytest.raises(ValueError, match="fewer than --shards 100000"):
        reshard(inputs, tmp_path / "many", 100000, seed=0, show_progress=False)


def test_eval_set_picks_as_the_reference_pick_eval_samples(small_dataset, tmp_path):
    inputs = _inputs(small_dataset)
    everything = Samples.concat([read_shard(p) for p in inputs])
    count = pick_eval_set(inputs, tmp_path / "eval.hdf5", 300, shape=SHAPE, show_progress=False)
    picked = read_shard(tmp_path / "eval.hdf5")
    # pick_eval_samples.py: records[int(i * pick_ratio)] with pick_ratio = num_examples / num_to_pick.
    ratio = len(everything) / 300
    expected = everything.take(np.array([int(i * ratio) for i in range(300)]))
    assert count == len(picked) == 300
    for field in ("tokens", "offsets", "masked_positions", "masked_ids", "nsp_labels"):
        assert np.array_equal(getattr(picked, field), getattr(expected, field))
    with pytest.raises(FileExistsError, match=r"eval\.hdf5: already exists; pass --overwrite"):
        pick_eval_set(inputs, tmp_path / "eval.hdf5", 10, shape=SHAPE, show_progress=False)
    with pytest.raises(ValueError, match=r"2048 samples in 4 shard\(s\), fewer than --samples 10000"):
        pick_eval_set(inputs, tmp_path / "big.hdf5", 10000, show_progress=False)
