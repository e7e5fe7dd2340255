"""`mlperf-bert check | package | score | report`: the submitter's last mile, over the official tools."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from bert.cli.common import out_option, system_option
from bert.mlperf_rules import DEFAULT_RULESET, RULESETS

RULESET_HELP = f"Official ruleset ({' or '.join(RULESETS)}; BERT was retired after {RULESETS[-1]})."


def _console():
    from rich.console import Console

    return Console(width=max(Console().width, 120))


def _with_progress(work, *args):
    """Runs one compliance function under a transient status line on stderr (shown on a terminal only);
    its errors become one-line messages: exit 2 for a request it does not serve, 1 for bad input or a file
    that cannot be read or written (the output trees are built aside, so such a failure leaves none half-written)."""
    from rich.console import Console

    from compliance.errors import InputError, UsageError

    status = Console(stderr=True).status("starting")
    try:
        with status:
            return work(*args, progress=status.update)
    except UsageError as e:
        raise click.UsageError(str(e)) from None
    except InputError as e:
        raise click.ClickException(str(e)) from None
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        raise click.ClickException(f"{where}{e.strerror or e}; nothing was changed") from None


@click.command()
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--ruleset", default=DEFAULT_RULESET, show_default=True, help=RULESET_HELP)
@click.option("--division", type=click.Choice(["closed", "open"]), default=None,
              help="The division the logs must belong to (default: what the logs and system JSON say).")
def check(path: Path, ruleset: str, division: str | None) -> None:
    """Check a result log, a folder of result logs or a submission tree with the official tools."""
    from compliance.check import check
    from compliance.render import print_check

    report = _with_progress(check, path, ruleset, division)
    print_check(report, _console())
    sys.exit(0 if report.passed else 1)


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
def package(logs_dir: Path | None, logs_option: Path | None, system: str, org: str | None, out: Path, impl: str,
            force: bool, ruleset: str) -> None:
    """Build a submission tree from the runs' logs and their descriptor, then check it. LOGS: the folder of
    their result_*.txt (logs/<system> for run_and_time.sh's)."""
    from compliance.package import build_package
    from compliance.render import print_check

    if (logs_dir is None) == (logs_option is None):
        raise click.UsageError("give the folder of the runs' logs once: mlperf-bert package LOGS --system ...")
    result = _with_progress(build_package, system, logs_dir or logs_option, org, out, impl, force, ruleset)
    note = " (the checkout has uncommitted changes; they are not in the package)" if result.uncommitted_changes else ""
    click.echo(f"packaged {result.org_dir} with the code of commit {result.commit[:12]}{note}")
    print_check(result.check, _console())
    sys.exit(0 if result.check.passed else 1)


@click.command()
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--ruleset", default=DEFAULT_RULESET, show_default=True, help=RULESET_HELP)
def score(path: Path, ruleset: str) -> None:
    """Score a submission (ORG folder) with the official result summarizer, after the package checker."""
    from compliance.render import print_score
    from compliance.score import score

    report = _with_progress(score, path, ruleset)
    print_score(report, _console())
    sys.exit(0 if report.passed else 1)


@click.command()
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("-o", "--out", required=True, type=click.Path(path_type=Path),
              help="Folder for report.md and its figures (replaced when it holds an earlier report).")
@click.option("--ruleset", default=DEFAULT_RULESET, show_default=True, help=RULESET_HELP)
def report(path: Path, out: Path, ruleset: str) -> None:
    """Write a Markdown report with figures for a submission (ORG folder)."""
    from compliance.report import write_report

    result = _with_progress(write_report, path, out, ruleset)
    verdict = "PASS" if result.score.passed else "FAIL (see the verdict in the report)"
    click.echo(f"wrote {result.path} and {len(result.figures)} figures; verdict {verdict}")
    sys.exit(0 if result.score.passed else 1)


COMMANDS = [check, package, score, report]
