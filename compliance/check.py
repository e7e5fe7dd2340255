"""`mlperf-bert check PATH`: a result log, a folder of result logs or a submission tree, checked the way the
reviewers check it, after the plain-words checks of precheck.py and the judgement of the logs (judgement.py,
provenance.py).

Every log is read once (result_log, through compliance.files) and judged once; each official tool runs once per
log, folder or package (for `score`, the package checker and the result summarizer run together on one copy).
The verdict passes only when nothing finds an error, every official tool that applies ran and passed, and (for a
folder or a package) at most one run does not count, as olympic scoring allows, and that one failed as genuine
runs fail (compliance.judgement). `package`, `score` and `report` show this verdict.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from bert.mlperf_rules import BENCHMARK, DEFAULT_RULESET, DIVISIONS
from compliance.checkers import (
    CheckResult,
    Scoring,
    compliance_check,
    package_check,
    rcp_check,
    require_ruleset,
    score_package,
    system_desc_check,
)
from compliance.errors import UsageError
from compliance.findings import ERROR, Finding
from compliance.judgement import RunCount, count_run, dropped_runs, package_judgement, platform_findings
from compliance.precheck import folder_findings, log_findings, package_findings, read_system_json
from compliance.provenance import package_provenance
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
    note: str = ""  # why it did not run, or why it does not apply, or what it left out
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
    descriptions: dict[str, dict] = field(default_factory=dict)  # a package's systems/<name>.json, by name
    scoring: Scoring | None = None  # the package checker and result summarizer, when the check was for `score`

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

    def logs_of(self, system: str) -> list[ResultLog]:
        """The logs of one system of a package (results/<system>/bert/), in run order."""
        return [row.log for row in self.rows if row.label.split("/", 1)[0] == system]


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
                progress: Progress) -> bool:
    """The logs of one folder: a row per log, the folder's findings and the RCP checker where it applies.
    Returns whether the official tools can read the folder (nothing in it blocks them)."""
    logs = [read_result_log(p) for p in result_logs_in(folder)]
    division = division or _logged_division(logs)
    rows = _check_logs(logs, [label_prefix + log.path.name for log in logs], division, report.ruleset, progress)
    found = folder_findings(folder, logs, division, report.ruleset)
    failing = {row.label: row.count for row in rows if row.count.reason is not None}
    report.rows += rows
    report.findings += found + dropped_runs(folder, failing)
    readable = not any(f.blocks for f in found) and not any(f.blocks for row in rows for f in row.findings)
    if division == "open":
        report.tools.append(ToolRun("RCP checker", str(folder), None, "applies to the closed division only",
                                    applies=False))
    elif division is None:
        report.tools.append(ToolRun("RCP checker", str(folder), None, "not run: the division is unclear"))
    elif not readable:
        report.tools.append(ToolRun("RCP checker", str(folder), None, "not run: it would crash on or misjudge the "
                                    "logs; fix the problems above first"))
    else:
        progress(f"RCP checker: {folder}")
        report.tools.append(ToolRun("RCP checker", str(folder), rcp_check(folder, report.ruleset)))
    return readable


def _system_division(description: dict | None) -> str | None:
    division = description.get("division") if description is not None else None
    return division if division in DIVISIONS else None


def _check_systems(report: CheckReport, org: Path, progress: Progress) -> set[str]:
    """Each systems/<name>.json, read once: its problems and the system description checker. Returns the names
    of those the official tools cannot read."""
    unreadable = set()
    for system_json in sorted((org / "systems").glob("*.json")):
        description, found = read_system_json(system_json)
        report.findings += found
        if description is not None:
            report.descriptions[system_json.stem] = description
        if any(f.blocks for f in found):
            unreadable.add(system_json.stem)
            report.tools.append(ToolRun("system description checker", str(system_json), None,
                                        "not run: it would crash on this file; fix the problems above first"))
        else:
            progress(f"system description checker: {system_json.name}")
            report.tools.append(ToolRun("system description checker", str(system_json),
                                        system_desc_check(system_json, report.ruleset)))
    return unreadable


def _package_tools(report: CheckReport, org: Path, readable: list[str], left_out: list[str], score: bool,
                   progress: Progress) -> None:
    """The package checker (and for `score` the result summarizer, on the same copy) on the systems the tools can
    read; the others are left out and named, so that one unreadable system does not hide the others' verdicts."""
    if not readable:
        report.tools.append(ToolRun("package checker", str(org), None, "not run: it would crash on or misjudge "
                                    "this package; fix the problems above first"))
        return
    note = (f"run on {len(readable)} of {len(readable) + len(left_out)} systems; left out (the tools would crash "
            f"on or misjudge them): {', '.join(left_out)}") if left_out else ""
    progress("package checker and result summarizer" if score else f"package checker: {org}")
    if score:
        report.scoring = score_package(org, report.ruleset, readable)
        report.tools.append(ToolRun("package checker", str(org), report.scoring.package, note))
    else:
        report.tools.append(ToolRun("package checker", str(org), package_check(org, report.ruleset, readable), note))


def _check_package(report: CheckReport, org: Path, division: str | None, score: bool, progress: Progress) -> None:
    found = package_findings(org)
    report.findings += found
    unreadable = _check_systems(report, org, progress)
    runs: dict[str, list[ResultLog]] = {}
    for bench in sorted((org / "results").glob(f"*/{BENCHMARK}")) if (org / "results").is_dir() else []:
        name = bench.parent.name
        system_division = _system_division(report.descriptions.get(name))
        if division is not None and system_division is not None and division != system_division:
            report.findings.append(Finding(str(org / "systems" / f"{name}.json"), f"division is "
                                           f"{system_division!r}, but the package is checked as {division!r}"))
        if not _check_runs(report, bench, system_division or division, f"{name}/", progress):
            unreadable.add(name)
        runs[name] = report.logs_of(name)
    report.findings += platform_findings(org, report.descriptions, runs)
    report.findings += package_judgement(org, report.descriptions, runs)
    report.findings += package_provenance(org, report.descriptions, runs)
    unreadable |= {Path(f.where).name for f in found if f.blocks and Path(f.where).parent.name == "results"}
    whole = any(f.blocks and Path(f.where) == org for f in found)
    names = sorted(set(report.descriptions) | set(runs))
    readable = [] if whole else [n for n in names if n not in unreadable and n in report.descriptions and n in runs]
    _package_tools(report, org, readable, sorted(set(names) - set(readable)), score, progress)


def check(path: str | Path, ruleset: str = DEFAULT_RULESET, division: str | None = None,
          progress: Progress | None = None, score: bool = False) -> CheckReport:
    """Checks a result log, a folder of result logs or a submission (and, with `score`, scores the submission:
    CheckReport.scoring); raises TargetError or RulesetError for a PATH or ruleset it cannot check."""
    path, ruleset = Path(path), require_ruleset(ruleset)
    progress = progress or (lambda message: None)
    if division is not None and division not in DIVISIONS:
        raise TargetError(f"--division {division!r}: use 'closed' or 'open'")
    if path.is_file() or path.exists() and not path.is_dir():
        report = CheckReport(path, "log", ruleset, division)
        report.rows += _check_logs([read_result_log(path)], [path.name], division, ruleset, progress)
        return report
    if not path.exists():
        raise TargetError(f"{path}: no such file or folder")
    org = find_package(path)
    if org is not None:
        report = CheckReport(org, "package", ruleset, division)
        _check_package(report, org, division, score, progress)
        return report
    if score:
        raise TargetError(f"{path}: not a submission (ORG/systems/<name>.json and ORG/results/<name>/bert/)")
    if result_logs_in(path):
        report = CheckReport(path, "folder", ruleset, division)
        _check_runs(report, path, division, "", progress)
        return report
    raise TargetError(f"{path}: neither a result log, a folder of result_*.txt logs, nor a submission "
                      "(ORG/systems/<name>.json and ORG/results/<name>/bert/result_*.txt)")
