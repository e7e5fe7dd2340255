"""`mlperf-bert check PATH`: a result log, a folder of result logs or a submission tree, checked the way the
reviewers check it, after the plain-words checks of precheck.py.

The verdict passes only when no plain-words check finds an error, every official tool that applies ran and
passed, and (for a folder or a package) at most one run does not count, as olympic scoring allows, and that
one is the sound log of a run that did not converge (compliance.judgement).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from bert.mlperf_rules import BENCHMARK, DEFAULT_RULESET, DIVISIONS
from compliance.checkers import (
    CheckResult,
    compliance_check,
    package_check,
    rcp_check,
    require_ruleset,
    system_desc_check,
)
from compliance.errors import UsageError
from compliance.findings import ERROR, Finding
from compliance.judgement import RunCount, count_run, dropped_runs
from compliance.precheck import folder_findings, log_findings, package_findings, system_json_findings
from compliance.result_log import ResultLog, read_result_log, result_logs_in

Progress = Callable[[str], None]


class TargetError(UsageError):
    """PATH is not something `check` knows how to check."""


@dataclass(frozen=True)
class LogRow:
    label: str
    log: ResultLog
    findings: tuple[Finding, ...]
    compliance: CheckResult | None  # None: not run, the tool would crash on this log

    @functools.cached_property
    def count(self) -> RunCount:  # judged once per row, however often the report asks
        counted = count_run(self.log, list(self.findings), self.compliance)
        if counted.reason is None and self.compliance is None:
            return RunCount("not checked")
        return counted

    @property
    def why_not_counted(self) -> str | None:
        return self.count.reason


@dataclass(frozen=True)
class ToolRun:
    tool: str
    target: str
    result: CheckResult | None
    note: str = ""  # why it did not run, or why it does not apply
    applies: bool = True

    @property
    def passed(self) -> bool:
        return self.result.passed if self.result is not None else not self.applies


@dataclass
class CheckReport:
    target: Path
    kind: str  # "log", "folder" or "package"
    ruleset: str
    division: str | None
    rows: list[LogRow] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    tools: list[ToolRun] = field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.level == ERROR]

    @property
    def blocked(self) -> bool:
        """Whether some input would crash the official tools (they are then not run on it)."""
        return any(f.blocks for f in self.findings) or any(f.blocks for row in self.rows for f in row.findings)

    @property
    def passed(self) -> bool:
        rows_ok = self.kind != "log" or all(row.why_not_counted is None for row in self.rows)
        return rows_ok and not self.blocked and not self.errors and all(t.passed for t in self.tools)


def find_package(path: Path) -> Path | None:
    """The submission folder (ORG, holding systems/ and results/) at PATH or as PATH's only such child."""
    def is_package(p: Path) -> bool:
        return (p / "systems").is_dir() or (p / "results").is_dir()
    if is_package(path):
        return path
    children = [c for c in sorted(path.iterdir()) if c.is_dir() and is_package(c)] if path.is_dir() else []
    return children[0] if len(children) == 1 else None


def _check_logs(logs: list[ResultLog], labels: list[str], division: str | None, ruleset: str,
                progress: Progress) -> list[LogRow]:
    """A row per log: its own findings and the compliance checker's verdict (several checkers at a time: each
    is a short process that mostly waits on Python's start-up)."""
    findings = [tuple(log_findings(log, division)) for log in logs]
    checkable = [log.path for log, found in zip(logs, findings) if not any(f.blocks for f in found)]
    progress(f"compliance checker: {len(checkable)} log(s)")
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 1)) as pool:
        verdicts = dict(zip(checkable, pool.map(lambda path: compliance_check(path, ruleset), checkable)))
    return [LogRow(label, log, found, verdicts.get(log.path)) for label, log, found in zip(labels, logs, findings)]


def _logged_division(logs: list[ResultLog]) -> str | None:
    divisions = [log.division for log in logs]
    same = bool(divisions) and all(d == divisions[0] for d in divisions)
    return divisions[0] if same and divisions[0] in DIVISIONS else None


def _check_runs(report: CheckReport, folder: Path, division: str | None, label_prefix: str,
                progress: Progress) -> None:
    """The logs of one folder: a row per log, the folder's findings and the RCP checker where it applies."""
    logs = [read_result_log(p) for p in result_logs_in(folder)]
    division = division or _logged_division(logs)
    rows = _check_logs(logs, [label_prefix + log.path.name for log in logs], division, report.ruleset, progress)
    found = folder_findings(folder, logs, division, report.ruleset)
    failing = {row.label: row.count for row in rows if row.count.reason is not None}
    report.rows += rows
    report.findings += found + dropped_runs(folder, failing)
    if division == "open":
        report.tools.append(ToolRun("RCP checker", str(folder), None, "applies to the closed division only",
                                    applies=False))
    elif division is None:
        report.tools.append(ToolRun("RCP checker", str(folder), None, "not run: the division is unclear"))
    elif any(f.blocks for f in found) or any(f.blocks for row in rows for f in row.findings):
        report.tools.append(ToolRun("RCP checker", str(folder), None, "not run: it would crash on or misjudge the "
                                    "logs; fix the problems above first"))
    else:
        progress(f"RCP checker: {folder}")
        report.tools.append(ToolRun("RCP checker", str(folder), rcp_check(folder, report.ruleset)))


def _system_division(path: Path) -> str | None:
    try:
        division = json.loads(path.read_text()).get("division")
    except (OSError, ValueError, AttributeError):
        return None
    return division if division in DIVISIONS else None


def _check_package(report: CheckReport, org: Path, division: str | None, progress: Progress) -> None:
    report.findings += package_findings(org)
    for system_json in sorted((org / "systems").glob("*.json")):
        found = system_json_findings(system_json)
        report.findings += found
        if any(f.blocks for f in found):
            report.tools.append(ToolRun("system description checker", str(system_json), None,
                                        "not run: it would crash on this file; fix the problems above first"))
        else:
            progress(f"system description checker: {system_json.name}")
            report.tools.append(ToolRun("system description checker", str(system_json),
                                        system_desc_check(system_json, report.ruleset)))
    for bench in sorted((org / "results").glob(f"*/{BENCHMARK}")):
        name = bench.parent.name
        system_division = _system_division(org / "systems" / f"{name}.json")
        if division is not None and system_division is not None and division != system_division:
            report.findings.append(Finding(str(org / "systems" / f"{name}.json"), f"division is "
                                           f"{system_division!r}, but the package is checked as {division!r}"))
        _check_runs(report, bench, system_division or division, f"{name}/", progress)
    if report.blocked:
        report.tools.append(ToolRun("package checker", str(org), None, "not run: it would crash on or misjudge "
                                    "this package; fix the problems above first"))
    else:
        progress(f"package checker: {org}")
        report.tools.append(ToolRun("package checker", str(org), package_check(org, report.ruleset)))


def check(path: str | Path, ruleset: str = DEFAULT_RULESET, division: str | None = None,
          progress: Progress | None = None) -> CheckReport:
    """Checks a result log, a folder of result logs or a submission; raises TargetError or RulesetError for a
    PATH or ruleset it cannot check."""
    path, ruleset = Path(path), require_ruleset(ruleset)
    progress = progress or (lambda message: None)
    if division is not None and division not in DIVISIONS:
        raise TargetError(f"--division {division!r}: use 'closed' or 'open'")
    if path.is_file():
        report = CheckReport(path, "log", ruleset, division)
        log = read_result_log(path)
        report.rows += _check_logs([log], [path.name], division, ruleset, progress)
        return report
    if not path.exists():
        raise TargetError(f"{path}: no such file or folder")
    org = find_package(path)
    if org is not None:
        report = CheckReport(org, "package", ruleset, division)
        _check_package(report, org, division, progress)
        return report
    if result_logs_in(path):
        report = CheckReport(path, "folder", ruleset, division)
        _check_runs(report, path, division, "", progress)
        return report
    raise TargetError(f"{path}: neither a result log, a folder of result_*.txt logs, nor a submission "
                      "(ORG/systems/<name>.json and ORG/results/<name>/bert/result_*.txt)")
