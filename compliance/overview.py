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


def _all(console: Console, parts: list[tuple[str, int, bool]], skipped: list[str], what: str) -> None:
    """After several submissions: a row for each (name, BERT systems, passed) and the verdict of them all."""
    table = Table()
    for name in ("submission", "BERT systems", what):
        table.add_column(name, overflow="fold")
    for name, systems, passed in parts:
        table.add_row(name, str(systems), "PASS" if passed else "FAIL")
    console.rule()
    console.print(table)
    if skipped:
        _say(console, f"skipped (no BERT results): {', '.join(skipped)}")
    failing = [name for name, _, passed in parts if not passed]
    verdict = f"FAIL ({len(failing)} of {len(parts)}: {', '.join(failing)})" if failing or not parts else "PASS"
    _say(console, f"VERDICT (all {len(parts)} submissions): {verdict}", style="bold")


def _each(console: Console, reports: list, show) -> None:
    for index, report in enumerate(reports):
        if index:
            console.rule()
        show(report, console)


def print_tree_check(tree: TreeCheck, console: Console) -> None:
    """One submission (or log, or folder of logs) as render prints it; several, each so and then all together."""
    _each(console, tree.reports, print_check)
    if len(tree.reports) > 1 or tree.skipped:
        _all(console, [(r.target.name, len(r.systems), r.passed) for r in tree.reports], tree.skipped, "verdict")


def print_tree_score(tree: TreeScore, console: Console) -> None:
    _each(console, list(tree.reports), print_score)
    if len(tree.reports) > 1 or tree.skipped:
        parts = [(r.check.target.name, len(r.check.systems), r.passed) for r in tree.reports]
        _all(console, parts, list(tree.skipped), "score stands")


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
