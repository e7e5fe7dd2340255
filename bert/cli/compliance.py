"""`mlperf-bert check | package | score | report | review`: the submitter's last mile and the reviewer's view, over
the official tools."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from bert.cli.common import out_option, system_option
from bert.mlperf_rules import DEFAULT_RULESET, RULESETS

RULESET_HELP = f"Official ruleset ({' or '.join(RULESETS)}; BERT was retired after {RULESETS[-1]})."
TARGET_HELP = ("PATH: a result log, a folder of result logs, a submission (ORG folder: systems/ and results/, other "
               "benchmarks' systems skipped) or a folder of submissions (a results repository).")


def _console():
    from rich.console import Console

    return Console(width=max(Console().width, 120))


def _bars(quiet: bool):
    """The progress of the long steps (compliance.check.Progress) as bars on stderr, as the data commands draw
    them; none with --quiet or when stderr is no terminal."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
    from rich.progress import Progress as Bars

    from compliance.check import Progress

    class Drawn(Progress):
        def __init__(self, bars: Bars):
            self.bars, self.task, self.total = bars, None, 0

        def step(self, description: str, total: int) -> None:
            if self.task is not None:  # the step before is over, whatever it counted
                self.bars.update(self.task, completed=self.total)
            self.task, self.total = self.bars.add_task(description, total=total), total

        def advance(self, amount: int = 1) -> None:
            if self.task is not None:
                self.bars.advance(self.task, amount)

    console = Console(stderr=True)
    if quiet or not console.is_terminal:
        return None, Progress()
    bars = Bars(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TimeRemainingColumn(), console=console)
    return bars, Drawn(bars)


def _with_progress(work, *args, quiet: bool = False, **kwargs):
    """Runs one compliance function with its progress drawn (_bars); its errors become one-line messages: exit 2
    for a request it does not serve, 1 for bad input or a file that cannot be read or written (outputs are built
    aside, so such a failure leaves none half-written)."""
    from contextlib import nullcontext

    from compliance.errors import InputError, UsageError

    bars, progress = _bars(quiet)
    try:
        with bars if bars is not None else nullcontext():
            return work(*args, progress=progress, **kwargs)
    except UsageError as e:
        raise click.UsageError(str(e)) from None
    except InputError as e:
        raise click.ClickException(str(e)) from None
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        raise click.ClickException(f"{where}{e.strerror or e}; nothing was changed") from None


SUBMISSIONS_HELP = TARGET_HELP.replace("a result log, a folder of result logs, ", "")


def _report_out(what: str):
    return out_option(f"Folder for {what} (what an earlier run of the command wrote there is replaced; a folder "
                      "holding anything else is refused).", required=True)


def _target(f):
    """The options every command over a check shares: PATH, --ruleset, --system, --quiet."""
    f = click.option("--quiet", is_flag=True, help="No progress bars.")(f)
    f = click.option("--system", "systems", multiple=True, metavar="NAME",
                     help="A system of the package, its systems/<NAME>.json (or ORG/NAME in a folder of submissions); "
                     "repeat it for more (default: every system with BERT results).")(f)
    f = click.option("--ruleset", default=DEFAULT_RULESET, show_default=True, help=RULESET_HELP)(f)
    return click.argument("path", type=click.Path(path_type=Path))(f)


@click.command(epilog=TARGET_HELP)
@_target
@click.option("--division", type=click.Choice(["closed", "open"]), default=None,
              help="The division the logs must belong to (default: what the logs and system JSON say).")
def check(path: Path, ruleset: str, systems: tuple[str, ...], quiet: bool, division: str | None) -> None:
    """Check result logs or submissions with the official tools and the harness's own judgement."""
    from compliance.check import check_tree
    from compliance.overview import print_tree_check

    tree = _with_progress(check_tree, path, ruleset, division, systems=list(systems) or None, quiet=quiet)
    print_tree_check(tree, _console())
    sys.exit(0 if tree.passed else 1)


@click.command()
@click.argument("logs_dir", metavar="LOGS", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--logs", "logs_option", hidden=True, type=click.Path(file_okay=False, path_type=Path),
              help="LOGS given as an option, as scripts gave it before.")
@system_option("The descriptor the runs ran", required=True)
@click.option("--org", default=None, help="Submitting organization, the top folder of the package: the descriptor's "
              "submitter or the start of its name (default: the submitter's name).")
@out_option("Where to write ORG/.", required=True)
@click.option("--impl", default="pytorch", show_default=True,
              help="Implementation name: benchmarks/bert/implementations/<impl>/.")
@click.option("--force", is_flag=True, help="Replace an existing OUT/ORG.")
@click.option("--ruleset", default=DEFAULT_RULESET, show_default=True, help=RULESET_HELP)
@click.option("--quiet", is_flag=True, help="No progress bars.")
def package(logs_dir: Path | None, logs_option: Path | None, system: str, org: str | None, out: Path, impl: str,
            force: bool, ruleset: str, quiet: bool) -> None:
    """Build a submission tree from the runs' logs and their descriptor, then check it. LOGS: the folder of
    their result_*.txt (logs/<system> for run_and_time.sh's)."""
    from compliance.package import build_package
    from compliance.render import print_check

    if (logs_dir is None) == (logs_option is None):
        raise click.UsageError("give the folder of the runs' logs once: mlperf-bert package LOGS --system ...")
    result = _with_progress(build_package, system, logs_dir or logs_option, org, out, impl, force, ruleset,
                            quiet=quiet)
    note = " (the checkout has uncommitted changes; they are not in the package)" if result.uncommitted_changes else ""
    click.echo(f"packaged {result.org_dir} with the code of commit {result.commit[:12]}{note}")
    print_check(result.check, _console())
    sys.exit(0 if result.check.passed else 1)


@click.command(epilog=SUBMISSIONS_HELP)
@_target
def score(path: Path, ruleset: str, systems: tuple[str, ...], quiet: bool) -> None:
    """Score submissions with the official result summarizer, after the package checker."""
    from compliance.overview import print_tree_score
    from compliance.score import score_tree

    tree = _with_progress(score_tree, path, ruleset, systems=list(systems) or None, quiet=quiet)
    print_tree_score(tree, _console())
    sys.exit(0 if tree.passed else 1)


@click.command(epilog=SUBMISSIONS_HELP)
@_target
@_report_out("report.md and its figures")
def report(path: Path, ruleset: str, systems: tuple[str, ...], quiet: bool, out: Path) -> None:
    """Write a Markdown report with figures for submissions."""
    from compliance.report import write_report

    result = _with_progress(write_report, path, out, ruleset, systems=list(systems) or None, quiet=quiet)
    verdict = "PASS" if result.scores.passed else "FAIL (see the verdict in the report)"
    click.echo(f"wrote {result.path} and {len(result.figures)} figures; verdict {verdict}")
    sys.exit(0 if result.scores.passed else 1)


@click.command(epilog=SUBMISSIONS_HELP)
@_target
@_report_out("review.md, review.csv, review.json and the figures")
def review(path: Path, ruleset: str, systems: tuple[str, ...], quiet: bool, out: Path) -> None:
    """One table across every BERT system of submissions (a whole round), as Markdown, CSV and JSON. Each row:
    the official and the harness's verdicts, the score, the RCP margin, figures per accelerator and the
    hyperparameters beside the RCP's."""
    from compliance.overview import print_review
    from compliance.review import write_review

    result = _with_progress(write_review, path, out, ruleset, systems=list(systems) or None, quiet=quiet)
    print_review(list(result.rows), _console())
    click.echo(f"wrote {len(result.files)} files to {out} (review.md, review.csv, review.json and figures); "
               f"{sum(r.ours == 'PASS' for r in result.rows)} of {len(result.rows)} systems pass")
    sys.exit(0 if result.passed else 1)


COMMANDS = [check, package, score, report, review]
