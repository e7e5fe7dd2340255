"""What `check` and `score` print: one table, the problems in plain words, then the verdict."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from compliance.check import CheckReport, LogRow, ToolRun
from compliance.findings import ERROR, Finding
from compliance.score import ScoreReport

MAX_TOOL_LINES = 12  # of a failing tool's own messages; its full output is in the check's report object


def _say(console: Console, line: str, style: str | None = None) -> None:
    """One line as it is: no markup (messages hold brackets), no colouring guesses, no wrapping."""
    console.print(line, markup=False, highlight=False, soft_wrap=True, style=style)


def _number(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _short(where: str, base: Path) -> str:
    try:
        relative = Path(where).resolve().relative_to(base)
    except ValueError:
        return where
    return str(relative) if relative.parts else str(base)


def _row_check(row: LogRow) -> str:
    if row.compliance is None:
        return "NOT CHECKED"
    errors = any(f.level == ERROR for f in row.findings)
    return "PASS" if row.compliance.passed and not errors else "FAIL"


def _log_table(report: CheckReport) -> Table:
    table = Table()
    table.add_column("log", overflow="fold")
    table.add_column("check")
    table.add_column("run")
    table.add_column("samples to converge", justify="right")
    table.add_column("minutes", justify="right")
    for row in report.rows:
        run = row.log.status or ("no run_stop" if row.log.events else "-")
        table.add_row(row.label, _row_check(row), run, _number(row.log.samples_to_converge),
                      _number(row.log.run_minutes, 3))
    return table


def _finding_line(finding: Finding, base: Path) -> str:
    return f"{finding.level.upper():7} {_short(finding.where, base)}: {finding.message}"


def _tool_lines(tool: ToolRun, base: Path) -> list[str]:
    target = _short(tool.target, base)
    if tool.result is None:
        state = "n/a" if not tool.applies else "NOT RUN"
        return [f"{state:7} {tool.tool} ({target}): {tool.note}"]
    note = f": {tool.note}" if tool.note else ""
    if tool.result.passed:
        return [f"{'PASS':7} {tool.tool} ({target}){note}"]
    problems = tool.result.problems() or tool.result.output.strip().splitlines()[-1:] or ["no output"]
    shown = [f"          {line}" for line in problems[:MAX_TOOL_LINES]]
    if len(problems) > MAX_TOOL_LINES:
        shown.append(f"          ... {len(problems) - MAX_TOOL_LINES} more lines")
    return [f"{'FAIL':7} {tool.tool} ({target}){note or ':'}", *shown]


def _compliance_failures(rows: list[LogRow], base: Path) -> list[str]:
    """The compliance checker's messages, once for all the logs that fail it the same way."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for row in rows:
        if row.compliance is not None and not row.compliance.passed:
            groups.setdefault(tuple(row.compliance.problems()), []).append(_short(row.compliance.target, base))
    lines = []
    for problems, logs in groups.items():
        shown = [f"          {line}" for line in problems[:MAX_TOOL_LINES]]
        if len(problems) > MAX_TOOL_LINES:
            shown.append(f"          ... {len(problems) - MAX_TOOL_LINES} more lines")
        lines += [f"{'FAIL':7} compliance checker ({', '.join(logs)}):", *shown]
    return lines


def print_check(report: CheckReport, console: Console) -> None:
    # The heading is a line of its own: a table title would be wrapped to the table's width, splitting paths.
    _say(console, f"{report.target} (ruleset {report.ruleset}"
                  f"{f', {report.division} division' if report.division else ''})", style="italic")
    _skipped(report, console)
    console.print(_log_table(report))
    print_problems(report, console)
    _say(console, f"VERDICT: {_verdict(report)}", style="bold")


def print_problems(report: CheckReport, console: Console) -> None:
    base = (report.target if report.target.is_dir() else report.target.parent).resolve()
    findings = [f for row in report.rows for f in row.findings] + report.findings
    for finding in sorted(findings, key=lambda f: f.level != ERROR):
        _say(console, _finding_line(finding, base))
    for line in _compliance_failures(report.rows, base):
        _say(console, line)
    for tool in report.tools:
        for line in _tool_lines(tool, base):
            _say(console, line)


def _verdict(report: CheckReport) -> str:
    if report.passed:
        return "PASS"
    errors = len([f for row in report.rows for f in row.findings if f.level == ERROR]) + len(report.errors)
    failed_logs = len([row for row in report.rows if row.compliance is not None and not row.compliance.passed])
    tools = [t.tool for t in report.tools if not t.passed]
    parts = [f"{errors} error(s) above"] if errors else []
    parts += [f"{failed_logs} log(s) fail the compliance checker"] if failed_logs else []
    parts += [f"{', '.join(dict.fromkeys(tools))} did not pass"] if tools else []
    if report.kind == "log" and not parts:
        parts.append(f"the run does not count: {report.rows[0].why_not_counted}")
    return f"FAIL ({'; '.join(parts)})"


def _skipped(report: CheckReport, console: Console) -> None:
    if report.skipped:  # another benchmark's systems, named once
        _say(console, f"skipped (no bert/ results): {', '.join(report.skipped)}")


def print_score(report: ScoreReport, console: Console) -> None:
    _say(console, f"{report.check.target} (ruleset {report.check.ruleset})", style="italic")
    _skipped(report.check, console)
    table = Table()
    for name in ("system", "division", "score (minutes)", "samples to converge", "RCP", "scaling factor", "runs"):
        table.add_column(name, justify="left" if name in ("system", "division", "RCP") else "right",
                         overflow="fold")  # a published system's name runs to 40 characters: shown whole
    for s in report.systems:
        samples = _number(s.samples_to_converge) + (" (logs)" if s.samples_source == "logs" else "")
        table.add_row(s.system, s.division, _number(s.minutes, 5), samples, s.rcp, _number(s.scaling_factor, 4),
                      str(s.runs))
    console.print(table)
    print_problems(report.check, console)
    if report.scoring is None:
        _say(console, "NOT RUN package checker and result summarizer: the tools can read no system of this package")
    if report.passed:
        verdict = "PASS (the score stands: the package checker found no errors)"
    elif not report.check.passed:
        verdict = "FAIL (the score does not stand: " + _verdict(report.check).removeprefix("FAIL (")
    else:
        verdict = f"FAIL (the result summarizer gave no score: {report.scoring.summarizer_output.strip()[-300:]})"
    _say(console, f"VERDICT: {verdict}", style="bold")
