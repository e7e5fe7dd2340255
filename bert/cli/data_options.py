"""What the `mlperf-bert data` commands share: their inputs (paths listed after the options, folders expanded, an
output inside an input refused), the shape and bucket options of the commands that write shards, and their one-line
errors."""

from __future__ import annotations

import os
from pathlib import Path

import click

from bert.cli.common import os_error_line
from bert.mlperf_rules import REFERENCE_PREP


class DataError(click.ClickException):
    """A data command's one-line error (bad input, a folder that would be overwritten)."""


def data_errors(call):
    try:
        return call()
    except ValueError as e:
        raise DataError(str(e)) from None
    except OSError as e:  # a folder it may not write; a full disk
        raise DataError(os_error_line(e)) from None


def input_paths(option: tuple[Path, ...], more: tuple[Path, ...], out: Path, missing: str,
           suffixes: tuple[str, ...] = ()) -> list[Path]:
    """The input paths given after the options (and to the hidden repeatable option scripts used before), folders
    expanded; an `out` equal to or inside one of the paths as given is refused (bert.ownership)."""
    from bert.ownership import refuse_overlap
    from bert.prep.text_parts import expand_inputs

    if not option and not more:
        raise click.UsageError(missing)

    def expand() -> list[Path]:
        refuse_overlap(out, [*option, *more])
        return expand_inputs([*option, *more], suffixes)
    return data_errors(expand)


def shard_paths(option: tuple[Path, ...], more: tuple[Path, ...], out: Path) -> list[Path]:
    return input_paths(option, more, out, "give at least one shard or folder of shards (SHARDS...)", (".hdf5", ".h5"))


def inputs(option: str, dest: str, metavar: str):
    """The inputs a command acts on, listed after its options as METAVAR...; `option` (repeatable, hidden) is
    the form scripts passed them in before."""
    def wrap(f):
        f = click.option(option, dest, multiple=True, hidden=True, type=click.Path(exists=True, path_type=Path))(f)
        return click.argument(f"more_{dest}", metavar=f"{metavar}...", nargs=-1,
                              type=click.Path(exists=True, path_type=Path))(f)
    return wrap


text_inputs = inputs("--text", "texts", "TEXT")
shard_inputs = inputs("--input", "inputs", "SHARDS")


def shape_options(f):
    # Applied bottom-up, so that --help lists --format, --max-seq-length, --max-predictions in that order.
    f = click.option("--max-predictions", type=click.IntRange(min=1),
                     default=REFERENCE_PREP.max_predictions_per_seq, show_default=True,
                     help="Masked positions per sample at most.")(f)
    f = click.option("--max-seq-length", type=click.IntRange(min=5), default=REFERENCE_PREP.max_seq_length,
                     show_default=True, help="Tokens per sample, [CLS] and both [SEP] included.")(f)
    return click.option("--format", "form", type=click.Choice(["fixed", "varlen"]), default="fixed",
                        show_default=True, help="fixed: the MLPerf form, rows padded to --max-seq-length with "
                        "an input_mask; varlen: rows cut to their length (no input_mask).")(f)


def bucket_options(overwrite_help: str):
    """The options of the two-pass bucket commands (reshard, stratify) after the shape options."""
    def wrap(f):
        f = click.option("--quiet", is_flag=True, help="No progress bars.")(f)
        f = click.option("--overwrite", is_flag=True, help=overwrite_help)(f)
        f = click.option("--tmp", "tmp_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                         help="Folder for the temporary buckets (about the input's size; default: inside --out).")(f)
        return click.option("--workers", type=click.IntRange(min=1), default=os.cpu_count() or 1,
                            show_default="one per core", help="Processes writing the output shards (the second "
                            "pass).")(f)
    return wrap
