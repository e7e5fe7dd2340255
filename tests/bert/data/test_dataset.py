"""A data folder whose layout contradicts the descriptor's load-balance strategy is refused in one line naming the
folder, the field and the fix; the length-bin shard sets of `data stratify` reach a stratified loader as such."""

from pathlib import Path

import pytest

from bert.data.balance import balance_strategy
from bert.data.dataset import dataset_files, stratified_sets
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
    assert [edge for edge, _ in dataset_files(stratified).bins] == [16, 64]
    with pytest.raises(ShardError, match="run.balance 'none' draws at random"):
        dataset_files(micro.variant({"dataset.dir": str(tmp_path), "dataset.train_glob": "train/len-*/*.hdf5"}))
