"""What every command module shares: the descriptor loader with one-line errors, and the command line's
convention for targets. The thing a command acts on (a log, a folder, a file) is positional; a descriptor is
always `--system` (SYSTEM_HELP says once where a name is looked up); what a command writes is `-o/--out`. Where
scripts still pass the older form (a positional descriptor, a positional output), it is kept as an alias that
no usage line shows."""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import click
from click.core import ParameterSource

from bert.data.balance import length_bins_problem
from bert.data.settings import MAX_SEED
from bert.descriptor_files import SEARCH_PATH_ENV
from bert.system import Descriptor, load_descriptor
from bert.typed_config import ConfigError

# Where every --system value is looked up: the one text that each such option's help ends with.
SYSTEM_HELP = (f"a path to a descriptor's JSON file, or the name of one in the site folders of {SEARCH_PATH_ENV} "
               "(colon-separated), then in systems/")


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


class Group(click.Group):
    """A command group whose listing shows each command's first sentence whole (click cuts it to fit the width
    and ends it with "...")."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, first_sentence(command)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def first_sentence(command: click.Command) -> str:
    """A command's short help, or the first sentence of its help (up to a full stop that ends a sentence, not
    one of "e.g." or "i.e."), on one line."""
    if command.short_help:
        return " ".join(command.short_help.split())
    paragraph = " ".join((command.help or "").strip().split("\n\n")[0].split())
    found = re.match(r"(.*?(?<!\be\.g)(?<!\bi\.e)\.)(?:\s|$)", paragraph)
    return found.group(1) if found else paragraph


class _Alias(click.Argument):
    """A positional form that scripts may still pass where the documented form is an option: no usage line
    shows it."""

    def get_usage_pieces(self, ctx: click.Context) -> list[str]:
        return []


def _given(ctx: click.Context, name: str) -> bool:
    return ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)


def _with_option(option: click.Option, positional_alias: bool, required: bool):
    """Decorates a command with `option`, and with `positional_alias` a hidden positional form of it too; the
    command receives one value under the option's name (the option's, else the positional's)."""
    dest, flag = option.name, option.opts[-1]
    alias = _Alias([f"{dest}_alias"], type=option.type, nargs=-1 if option.multiple else 1, required=False)

    def decorate(f):
        if not positional_alias:
            f.__click_params__ = [*getattr(f, "__click_params__", []), option]
            return f

        @functools.wraps(f)
        def merged(*args, **kwargs):
            ctx = click.get_current_context()
            aliased, value = kwargs.pop(alias.name), kwargs[dest]
            if option.multiple:
                kwargs[dest] = (*value, *aliased)
            elif aliased is not None:
                if _given(ctx, dest) and value != aliased:
                    raise click.UsageError(f"{flag} {value} and {aliased}: give it once, as {flag}")
                kwargs[dest] = aliased
            if required and not kwargs[dest]:
                raise click.MissingParameter(ctx=ctx, param=option)
            return f(*args, **kwargs)

        merged.__click_params__ = [*getattr(f, "__click_params__", []), alias, option]
        return merged
    return decorate


def system_option(lead: str, default: str | None = None, required: bool = False, dest: str = "system",
                  positional_alias: bool = False, multiple: bool = False):
    """The --system option of a command that reads a descriptor, its help `lead` and SYSTEM_HELP.
    `positional_alias`: a descriptor given as the first argument, as scripts gave it before, is taken too."""
    option = click.Option(["--system", dest], default=default, show_default=default is not None, metavar="SYSTEM",
                          required=required and not positional_alias, multiple=multiple,
                          help=f"{lead}: {SYSTEM_HELP}." + (" Repeatable." if multiple else ""))
    return _with_option(option, positional_alias, required)


def out_option(help_text: str, required: bool = False, file: bool = False, positional_alias: bool = False,
               default: Path | None = None):
    """The -o/--out option of a command that writes a file (`file`) or a folder."""
    kind = click.Path(dir_okay=not file, file_okay=file, path_type=Path)
    option = click.Option(["-o", "--out", "out"], type=kind, default=default, help=help_text,
                          required=required and not positional_alias)
    return _with_option(option, positional_alias, required)


PACKAGE = "mlperf-bert"  # the distribution's name (setup.cfg), whose version --version prints


def package_version() -> str:
    """The installed distribution's version; from setup.cfg where the code runs from a checkout not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        import configparser

        from bert.provenance import CHECKOUT

        config = configparser.ConfigParser()
        config.read(CHECKOUT / "setup.cfg")
        return config.get("metadata", "version", fallback="unknown")


def version_lines() -> list[str]:
    """What `mlperf-bert --version` prints: the version, the checkout's commit (and whether bert/ differs from
    it), and the digest of bert/ that every run logs as code_version."""
    from bert.provenance import committed_code, running_code

    running, committed = running_code(), committed_code()
    if running.commit is None:
        commit = "none (not a git checkout)"
    elif committed is not None and committed.digest != running.digest:
        commit = f"{running.commit} with uncommitted changes in bert/"
    else:
        commit = running.commit
    return [f"{PACKAGE} {package_version()}", f"commit {commit}", f"code {running.digest} (code_version in run logs)"]


@contextlib.contextmanager
def progress_status(first: str) -> Iterator[Callable[[str], None]]:
    """A status line on stderr while slow work runs, on a terminal only (a pipe or a file gets nothing), gone when
    the work ends; yields the function that says what the work does now."""
    from rich.console import Console

    status = Console(stderr=True).status(first)
    with status:
        yield status.update
