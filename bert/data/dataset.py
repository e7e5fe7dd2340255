"""The files of a dataset directory and the start-up checks on them.

`check_dataset` reads only HDF5 metadata (keys, shapes, dtypes), never sample data: MLPerf's clock starts
before the data is read, but a wrong path or a shard without a required key should stop the run before it
starts, with one line that names the file. The directory must have been verified by `mlperf-bert data verify`
(bert.data.manifest): its manifest must record every check (duplicates, eval samples in training, the
vocabulary) and no problem, the files must be those it lists, unchanged (names, sizes, sample counts, times; no
hashing), the eval file and the vocabulary those it checked, and what it proved must fit (token ids against the
vocabulary, lengths and masked positions against the run). The loader checks the ids and positions again as it
reads each shard (bert.data.shards.SampleLimits), against a change the manifest cannot see.

What a run asks of its dataset comes in one `DatasetNeeds` (bert.data.settings), which the descriptor composes
(bert.system.Descriptor.dataset_needs): this module knows the dataset, not the descriptor.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bert.data.balance import BalanceStrategy
from bert.data.manifest import check_manifest, check_verified_files, check_verified_limits
from bert.data.settings import DatasetNeeds
from bert.data.shards import ShardError, ShardHeader, shard_header
from bert.data.stratified_sampler import BinnedShards, binned_shards
from bert.data.vocab import Vocab, load_vocab


@dataclass(frozen=True)
class DatasetFiles:
    root: Path
    train_shards: list[Path]
    eval_file: Path
    vocab_file: Path
    bins: BinnedShards | None = None  # the training shards as the length-bin sets of `data stratify`, if they are


def dataset_files(needs: DatasetNeeds) -> DatasetFiles:
    spec, root = needs.spec, needs.root
    if not root.is_dir():
        hint = (" (run_and_time.sh writes this synthetic dataset on first use, or run "
                f"`mlperf-bert data synth --system {needs.system}`)") if spec.synthetic else ""
        raise ShardError(f"{root}: dataset directory does not exist{hint}; name the folder that holds it with "
                         f"DATADIR (run_and_time.sh) or --data-dir, or set run.dataset.dir in {needs.descriptor}")
    shards = sorted(root.glob(spec.train_glob))
    if not shards:
        raise ShardError(f"{root}: no training shards match {spec.train_glob!r} (run.dataset.train_glob)")
    bins = stratified_sets(root, shards, needs.strategy, needs.length_bins)
    return DatasetFiles(root, shards, root / spec.eval_file, root / spec.vocab_file, bins)


def stratified_sets(root: Path, shards: list[Path], strategy: BalanceStrategy,
                    length_bins: list[int] | None) -> BinnedShards | None:
    """The training shards as the length-bin shard sets of `data stratify` (None: they are not), checked against
    the strategy that reads them: a layout that contradicts the descriptor is refused in one line, never read in
    another way than the descriptor says."""
    bins = binned_shards(shards)
    if bins is None:
        return None
    if not strategy.stratified:
        raise ShardError(f"{root}: its training shards are the length-bin sets of `mlperf-bert data stratify` "
                         f"(len-<low>-<high> folders), but run.balance {strategy.name!r} draws at random, each batch "
                         "from one bin: set run.balance to \"stratified\" or \"stratified+local_presort\", or point "
                         "run.dataset.train_glob at unstratified shards")
    edges = [edge for edge, _ in bins]
    if length_bins is not None and length_bins != edges:
        raise ShardError(f"{root}: its len-<low>-<high> folders bin the lengths at {edges}, but run.length_bins is "
                         f"{length_bins}: set run.length_bins to {edges} or null (the folders' bins), or stratify the "
                         f"shards again with --bins {','.join(map(str, length_bins))}")
    return bins


def check_dataset(files: DatasetFiles, needs: DatasetNeeds, read_headers: bool = True) -> Vocab:
    """Validates every shard's header, the eval size and the vocabulary against what the run needs. Without
    `read_headers` (the pre-flight: 4,320 shards' headers take a minute) the sample counts are the manifest's,
    which the files' names, sizes and times still match, and the header widths are left to the ranks."""
    counts = {}
    if read_headers:
        for path in [*files.train_shards, files.eval_file]:
            header = shard_header(path)
            counts[path] = header.samples
            _check_header_widths(path, header, needs)
        _check_sample_counts(files, needs, counts)
    entries = check_manifest(files.root, counts, read_headers)
    if not read_headers:
        _check_sample_counts(files, needs, {files.root / e.path: e.samples for e in entries if e.samples is not None})
    vocab = load_vocab(files.vocab_file)
    if len(vocab) > needs.vocab_size:
        raise ShardError(f"{files.vocab_file}: {len(vocab)} word pieces but model {needs.model!r} has vocab_size "
                         f"{needs.vocab_size}; set run.model_overrides.vocab_size to at least {len(vocab)}")
    check_verified_limits(files.root, entries, files.vocab_file, len(vocab), needs.max_seq_length,
                          needs.max_predictions_per_seq)
    check_verified_files(files.root, entries, files.eval_file, files.vocab_file)
    return vocab


def _check_header_widths(path: Path, header: ShardHeader, needs: DatasetNeeds) -> None:
    if header.seq_length is not None and header.seq_length > needs.max_seq_length:
        raise ShardError(f"{path}: sequences of {header.seq_length} tokens exceed run.max_seq_length "
                         f"{needs.max_seq_length}")
    if header.predictions is not None and header.predictions > needs.max_predictions_per_seq:
        raise ShardError(f"{path}: {header.predictions} masked positions per sample exceed "
                         f"run.max_predictions_per_seq {needs.max_predictions_per_seq}")


def _check_sample_counts(files: DatasetFiles, needs: DatasetNeeds, counts: dict[Path, int]) -> None:
    """Enough eval samples for run.eval.samples and training samples for one step (`counts`: per file)."""
    if counts.get(files.eval_file, 0) < needs.eval_samples:
        raise ShardError(f"{files.eval_file}: has {counts.get(files.eval_file, 0)} eval samples, fewer than "
                         f"run.eval.samples = {needs.eval_samples}")
    train_samples = sum(counts.get(path, 0) for path in files.train_shards)
    if train_samples < needs.global_batch_size:
        raise ShardError(f"{files.root}: its {train_samples} training samples do not fill one step of "
                         f"run.global_batch_size {needs.global_batch_size}; use a smaller global batch or more data")
