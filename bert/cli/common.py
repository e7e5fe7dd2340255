"""What every command module shares: the descriptor loader with one-line errors."""

from __future__ import annotations

import click

from bert.data.balance import length_bins_problem
from bert.data.settings import MAX_SEED
from bert.system import Descriptor, load_descriptor
from bert.typed_config import ConfigError


def descriptor_for_command(system: str) -> Descriptor:
    """The descriptor named or pointed to by `system`; a bad one ends the command with its field-level error."""
    try:
        return load_descriptor(system)
    except ConfigError as e:
        raise click.ClickException(str(e)) from None


def os_error_line(error: OSError) -> str:
    """An OSError as one line: the file and the system's words for what failed (a full disk, a permission), or
    the error's own message (a refusal of bert.ownership, a shard that could not be written)."""
    if error.filename is not None and error.strerror:
        return f"{error.filename}: {error.strerror}"
    return str(error)


def seed_option(default_help: str):
    """The --seed option of every command that starts or plans runs (Descriptor.run_seed is the policy)."""
    return click.option("--seed", type=click.IntRange(0, MAX_SEED), default=None,
                        help=f"Run seed [default: {default_help}].")


def parse_length_bins(text: str | None, max_seq_length: int) -> list[int] | None:
    """A --bins option's comma-separated upper edges (None when not given), checked as run.length_bins is."""
    if text is None:
        return None
    try:
        edges = [int(v) for v in text.split(",")]
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected whole numbers separated by commas, e.g. 128,256,384,512",
                                 param_hint="--bins") from None
    problem = length_bins_problem(edges, max_seq_length)
    if problem:
        raise click.BadParameter(problem, param_hint="--bins")
    return edges
