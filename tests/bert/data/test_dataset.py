"""A data folder whose layout contradicts the descriptor's load-balance strategy is refused in one line naming the
folder, the field and the fix; the length-bin shard sets of `data stratify` reach a stratified loader as such. The
dataset is checked against what the run needs of it (DatasetNeeds), which the descriptor composes."""

from pathlib import Path

import pytest

from bert.data.balance import balance_strategy
from bert.data.dataset import check_dataset, dataset_files, stratified_sets
from bert.data.settings import DatasetNeeds, DatasetSpec
from bert.data.shards import ShardError
from bert.system import load_descriptor

STRATIFIED = balance_strategy("stratified", 64)
RANDOM = balance_strategy("none", 64)


def _shards(root: Path, *folders: str) -> list[Path]:
    paths = []
    for folder in folders:
        (root / folder).mkdir(parents=True, exist_ok=True)
        for i in range(2):
            paths.append(root / folder / f"part-{i}.hdf5")
            paths[-1].write_bytes(b"")  # only the layout is read here
    return sorted(paths)


def test_flat_shards_are_read_by_any_strategy(tmp_path):
    flat = _shards(tmp_path, "train")
    assert stratified_sets(tmp_path, flat, RANDOM, None) is None
    assert stratified_sets(tmp_path, flat, STRATIFIED, [16, 64]) is None  # binned as they are read


def test_stratified_sets_go_to_a_stratified_strategy_with_their_bins(tmp_path):
    paths = _shards(tmp_path, "train/len-0001-0016", "train/len-0017-0064")
    bins = stratified_sets(tmp_path, paths, STRATIFIED, None)
    assert [(edge, len(shards)) for edge, shards in bins] == [(16, 2), (64, 2)]
    assert stratified_sets(tmp_path, paths, STRATIFIED, [16, 64]) == bins


def test_a_layout_that_contradicts_the_strategy_is_one_line_naming_folder_field_and_fix(tmp_path):
    paths = _shards(tmp_path, "train/len-0001-0016", "train/len-0017-0064")
    mixed = paths + _shards(tmp_path, "train")
    refused = {
        rf"^{tmp_path}: .*run.balance 'none' draws at random.*set run.balance to \"stratified\"": (paths, RANDOM, None),
        r"bin the lengths at \[16, 64\], but run.length_bins is \[32, 64\]: set run.length_bins to \[16, 64\] or "
        r"null": (paths, STRATIFIED, [32, 64]),
        rf"^{tmp_path / 'train'}: holds training shards outside the len-<low>-<high> folders .* "
        r"run.dataset.train_glob matches both": (mixed, STRATIFIED, None),
    }
    for message, (shards, strategy, bins) in refused.items():
        with pytest.raises(ShardError, match=message) as error:
            stratified_sets(tmp_path, shards, strategy, bins)
        assert "\n" not in str(error.value)


def test_the_descriptor_s_dataset_files_carry_the_checked_layout(tmp_path):
    _shards(tmp_path, "train/len-0001-0016", "train/len-0017-0064")
    micro = load_descriptor("cpu_micro")
    stratified = micro.variant({"dataset.dir": str(tmp_path), "dataset.train_glob": "train/len-*/*.hdf5",
                                "balance": "stratified"})
    assert [edge for edge, _ in dataset_files(stratified.dataset_needs()).bins] == [16, 64]
    with pytest.raises(ShardError, match="run.balance 'none' draws at random"):
        dataset_files(micro.variant({"dataset.dir": str(tmp_path), "dataset.train_glob": "train/len-*/*.hdf5"})
                      .dataset_needs())


def _needs(root: Path, **changes) -> DatasetNeeds:
    """What a run of the small corpus asks of it, stated without a descriptor."""
    stated = dict(root=root, spec=DatasetSpec(dir=str(root)), strategy=RANDOM, length_bins=None, max_seq_length=64,
                  max_predictions_per_seq=10, eval_samples=256, global_batch_size=2048, model="micro",
                  vocab_size=4096, system="site_micro", descriptor=Path("/site/site_micro.json"))
    return DatasetNeeds(**(stated | changes))


def test_the_dataset_is_checked_against_what_the_run_needs_not_a_descriptor(small_dataset, tmp_path):
    files = dataset_files(_needs(small_dataset))
    assert len(files.train_shards) == 4 and files.vocab_file == small_dataset / "vocab.txt"
    assert len(check_dataset(files, _needs(small_dataset), read_headers=True)) <= 4096
    refused = {
        "vocab_size": (100, r"vocab\.txt: \d+ word pieces but model 'micro' has vocab_size 100; set "
                            r"run.model_overrides.vocab_size to at least \d+"),
        "eval_samples": (257, r"eval\.hdf5: has 256 eval samples, fewer than run.eval.samples = 257"),
        "global_batch_size": (2049, r"its 2048 training samples do not fill one step of run.global_batch_size 2049"),
        "max_seq_length": (32, r"sequences of 64 tokens exceed run.max_seq_length 32"),
    }
    for name, (value, message) in refused.items():
        with pytest.raises(ShardError, match=message):
            check_dataset(files, _needs(small_dataset, **{name: value}))
    with pytest.raises(ShardError, match=rf"^{tmp_path / 'none'}: dataset directory does not exist; .* or set "
                                         r"run.dataset.dir in /site/site_micro.json$"):
        dataset_files(_needs(tmp_path / "none"))


def test_the_descriptor_states_what_its_run_needs_of_the_dataset(tmp_path):
    micro = load_descriptor("cpu_micro")
    needs = micro.dataset_needs(tmp_path)
    assert needs.root == tmp_path and micro.dataset_needs().root == micro.dataset_dir()
    assert (needs.spec, needs.strategy, needs.length_bins) == (micro.run.dataset, micro.balance, micro.run.length_bins)
    assert (needs.max_seq_length, needs.max_predictions_per_seq, needs.eval_samples, needs.global_batch_size) == (
        micro.run.max_seq_length, micro.run.max_predictions_per_seq, micro.run.eval.samples,
        micro.run.global_batch_size)
    assert (needs.model, needs.vocab_size, needs.system, needs.descriptor) == (
        micro.run.model, micro.model_config().vocab_size, "cpu_micro", micro.path)
