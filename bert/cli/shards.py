"""`mlperf-bert data` commands that turn shards into shards: the reference's eval pick (eval-set), a re-cut into
shuffled shards (reshard), shard sets per length bin (stratify), and the reference's TFRecords imported (import).
bert.cli.data adds them to its group."""

from __future__ import annotations

import os
from pathlib import Path

import click

from bert.cli.common import out_option, parse_length_bins
from bert.cli.data_options import (
    bucket_options,
    data_errors,
    input_paths,
    inputs,
    shape_options,
    shard_inputs,
    shard_paths,
)
from bert.mlperf_rules import EVAL_SAMPLES, REFERENCE_PREP


@click.command(name="eval-set")
@shard_inputs
@out_option("The eval file.", required=True, file=True)
@click.option("--samples", type=click.IntRange(min=1), default=EVAL_SAMPLES, show_default=True,
              help="How many samples: of the n samples of the inputs (in order), sample int(i * (n / N)) "
              "for i < N, as the reference's pick_eval_samples.py picks them.")
@shape_options
@click.option("--overwrite", is_flag=True, help="Replace an existing --out file.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def eval_set(inputs: tuple[Path, ...], more_inputs: tuple[Path, ...], out: Path, samples: int, form: str,
             max_seq_length: int, max_predictions: int, overwrite: bool, quiet: bool) -> None:
    """Pick the eval set from the prepared eval shards as the reference does, into one file. SHARDS: the
    prepared eval shards, or folders of them."""
    from bert.prep.reshard import OutputShape, pick_eval_set

    paths = shard_paths(inputs, more_inputs, out)
    shape = OutputShape(form, max_seq_length, max_predictions)
    count = data_errors(lambda: pick_eval_set(paths, out, samples, shape, overwrite, not quiet))
    click.echo(f"wrote {count:,} eval samples to {out}")


@click.command()
@shard_inputs
@out_option("Folder for the new shards: OUT/part-00000-of-0000K.hdf5 ...", required=True)
@click.option("--shards", type=click.IntRange(min=1), required=True, help="How many shards to write (K).")
@click.option("--seed", type=int, default=REFERENCE_PREP.random_seed, show_default=True,
              help="Seed of the sample-level shuffle.")
@shape_options
@bucket_options("Delete the shards already in --out.")
def reshard(inputs: tuple[Path, ...], more_inputs: tuple[Path, ...], out: Path, shards: int, seed: int, form: str,
            max_seq_length: int, max_predictions: int, workers: int, tmp_dir: Path | None, overwrite: bool,
            quiet: bool) -> None:
    """Re-shard into K shuffled shards of near-equal size. Sizes differ by at most 1; a seeded sample-level
    shuffle, in bounded memory (a block of an input shard, then one output shard per worker): an external
    two-pass shuffle. The output depends on the inputs and --seed only. SHARDS: shards, or folders of shards
    (*.hdf5)."""
    from bert.prep.reshard import OutputShape
    from bert.prep.reshard import reshard as run_reshard

    paths = shard_paths(inputs, more_inputs, out)
    shape = OutputShape(form, max_seq_length, max_predictions)
    written = data_errors(lambda: run_reshard(paths, out, shards, seed, shape, workers, overwrite, tmp_dir,
                                               not quiet))
    click.echo(f"wrote {len(written)} shards to {out}")


@click.command()
@shard_inputs
@out_option("Folder for the shard sets: OUT/len-0001-0128/part-00000-of-0000K.hdf5 ...", required=True)
@click.option("--bins", "bins_text", default=None,
              help="Upper edges of the length bins (real tokens), e.g. 128,256,384,512 (the seed paper's). "
                   "Default: the inputs' own length quantiles, --bin-count of them.")
@click.option("--bin-count", type=click.IntRange(min=1), default=16, show_default=True,
              help="Without --bins: quantile bins of near-equal share, best the per-rank batch the sets are for "
                   "(fewer where one length fills more than a share).")
@click.option("--shards", type=click.IntRange(min=1), required=True,
              help="Shards per bin (K); at least the number of ranks lets every rank read its own.")
@click.option("--seed", type=int, default=REFERENCE_PREP.random_seed, show_default=True,
              help="Seed of the sample-level shuffle.")
@shape_options
@bucket_options("Delete the shards already in the bin folders.")
def stratify(inputs: tuple[Path, ...], more_inputs: tuple[Path, ...], out: Path, bins_text: str | None,
             bin_count: int, shards: int, seed: int, form: str, max_seq_length: int, max_predictions: int,
             workers: int, tmp_dir: Path | None, overwrite: bool, quiet: bool) -> None:
    """Split shards into one shard set per length bin (the stratified sampler's input). In bounded memory
    like reshard: K shards of near-equal size per bin, every sample once, shuffled. Train on them with
    run.dataset.train_glob "train/len-*/*.hdf5" and run.balance "stratified" or "stratified+local_presort".
    SHARDS: shards, or folders of shards (*.hdf5)."""
    from bert.prep.reshard import OutputShape
    from bert.prep.stratify import stratify as run_stratify

    edges = parse_length_bins(bins_text, max_seq_length)
    paths = shard_paths(inputs, more_inputs, out)
    shape = OutputShape(form, max_seq_length, max_predictions)
    written = data_errors(lambda: run_stratify(paths, out, edges, shards, seed, shape, workers, overwrite, tmp_dir,
                                                not quiet, bin_count))
    click.echo(f"wrote {len(written)} shards in {len({p.parent for p in written})} bin folders under {out}")


@click.command(name="import")
@inputs("--input", "inputs", "TFRECORDS")
@out_option("Folder for the shards: OUT/<input name without .tfrecord>.hdf5, one per input file.", required=True)
@click.option("--format", "form", type=click.Choice(["fixed", "varlen"]), default="fixed", show_default=True,
              help="fixed: rows padded as in the records; varlen: rows cut to their length.")
@click.option("--vocab", "vocab_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="The vocabulary of the records: lets the variable-length form store 16-bit ids, as prepare does.")
@click.option("--workers", type=click.IntRange(min=1), default=os.cpu_count() or 1, show_default="one per core",
              help="Files imported at once, each by its own process.")
@click.option("--overwrite", is_flag=True, help="Replace shards already in --out.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def import_(inputs: tuple[Path, ...], more_inputs: tuple[Path, ...], out: Path, form: str, vocab_path: Path | None,
            workers: int, overwrite: bool, quiet: bool) -> None:
    """Import TFRecord files of the reference into HDF5 shards, without TensorFlow. The create_pretraining_data
    output, pick_eval_samples' eval set; every record's checksums are verified, and a truncated or corrupt
    record stops the import naming the file and the record. TFRECORDS: TFRecord files, or folders of them
    (*.tfrecord, *.tfrecords)."""
    from bert.data.vocab import load_vocab
    from bert.prep.official_files import imported_verdict
    from bert.prep.tfrecord_import import SUFFIXES, import_tfrecords

    paths = input_paths(inputs, more_inputs, out, "give at least one TFRecord file or folder (TFRECORDS...)", SUFFIXES)
    vocab_size = len(data_errors(lambda: load_vocab(vocab_path))) if vocab_path else None
    results = data_errors(lambda: import_tfrecords(paths, out, form, vocab_size, workers, overwrite, not quiet))
    click.echo(f"imported {sum(r.samples for r in results):,} samples from {len(results)} file(s) into {out}")
    click.echo(imported_verdict(vocab_path).line("dataset"))


SHARD_COMMANDS = [eval_set, reshard, stratify, import_]  # of the `data` group
