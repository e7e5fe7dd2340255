"""What `check`, `score` and `review` print for a folder of submissions: each submission as for one
(compliance.render), then one table of them all and the verdict of them all; and the review's table."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from compliance.check import TreeCheck
from compliance.render import print_check, print_score
from compliance.review import ReviewRow
from compliance.score import TreeScore


def _say(console: Console, line: str, style: str | None = None) -> None:
    console.print(line, markup=False, highlight=False, soft_wrap=True, style=style)


def _summary(console: Console, rows: list[tuple[str, str, str]], skipped: list[str], what: str) -> None:
    table = Table(title=None)
    for name in ("submission", "BERT systems", what):
        table.add_column(name, overflow="fold")
    for row in rows:
        table.add_row(*row)
    console.print(table)
    if skipped:
        _say(console, f"skipped (no BERT results): {', '.join(skipped)}")


def print_tree_check(tree: TreeCheck, console: Console) -> None:
    """One submission (or log, or folder of logs) as render prints it; several, each so and then all together."""
    for index, report in enumerate(tree.reports):
        if index:
            console.rule()
        print_check(report, console)
    if len(tree.reports) > 1 or tree.skipped:
        console.rule()
        _summary(console, [(r.target.name, str(len(r.systems)), "PASS" if r.passed else "FAIL") for r in tree.reports],
                 tree.skipped, "verdict")
        failing = [r.target.name for r in tree.reports if not r.passed]
        verdict = "PASS" if tree.passed else f"FAIL ({len(failing)} of {len(tree.reports)}: {', '.join(failing)})"
        _say(console, f"VERDICT (all {len(tree.reports)} submissions): {verdict}", style="bold")


def print_tree_score(tree: TreeScore, console: Console) -> None:
    for index, report in enumerate(tree.reports):
        if index:
            console.rule()
        print_score(report, console)
    if len(tree.reports) > 1 or tree.skipped:
        console.rule()
        _summary(console, [(r.check.target.name, str(len(r.check.systems)), "PASS" if r.passed else "FAIL")
                           for r in tree.reports], list(tree.skipped), "score stands")
        failing = [r.check.target.name for r in tree.reports if not r.passed]
        verdict = "PASS" if tree.passed else f"FAIL ({len(failing)} of {len(tree.reports)}: {', '.join(failing)})"
        _say(console, f"VERDICT (all {len(tree.reports)} submissions): {verdict}", style="bold")


def print_review(rows: list[ReviewRow], console: Console) -> None:
    table = Table()
    for name in ("system", "official", "score (min)", "ours", "RCP", "margin", "accel.", "accel.-min",
                 "samples/s/accel."):
        table.add_column(name, justify="left" if name in ("system", "official", "ours", "RCP") else "right",
                         overflow="fold", no_wrap=name == "system")
    for r in rows:
        table.add_row(f"{r.org}/{r.system}", r.official, "-" if r.minutes is None else f"{r.minutes:.4f}", r.ours,
                      r.rcp, "-" if r.rcp_margin_percent is None else f"{r.rcp_margin_percent:+.1f}%",
                      "-" if r.accelerators is None else str(r.accelerators),
                      "-" if r.accelerator_minutes is None else f"{r.accelerator_minutes:,.1f}",
                      "-" if r.samples_per_second_per_accelerator is None
                      else f"{r.samples_per_second_per_accelerator:,.1f}")
    console.print(table)
