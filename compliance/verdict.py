"""The verdict of a check, composed in one place: a row per log (its findings and the compliance checker's
verdict), the findings of each folder and package, the official tools' lines, and from them whether it passes.

`judge_folder` is the one judgement of a folder of runs before the tools (each log's problems and the folder's);
`check` adds the tools' verdicts to it (`FolderJudgement.rows`, `counted_findings`), and `package` refuses from
it what would fail, before writing anything. The verdict passes only when nothing finds an error, every official
tool that applies ran and passed, and (for a folder or a package) at most one run does not count, as olympic
scoring allows, and that one failed as genuine runs fail (compliance.folder_rules).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from bert.mlperf_rules import DIVISIONS
from compliance.checkers import CheckResult, Scoring
from compliance.errors import UsageError
from compliance.findings import ERROR, Finding
from compliance.folder_rules import RunCount, count_run, dropped_runs, folder_findings
from compliance.log_rules import log_findings
from compliance.result_log import ResultLog
from compliance.staging import path_value_findings


class TargetError(UsageError):
    """PATH is not something `check` knows how to check."""


class Progress:
    """Where the long steps report: each step with its size, then each unit done. This one shows nothing; the
    command line draws bars (bert.cli.compliance)."""

    def step(self, description: str, total: int) -> None:
        pass

    def advance(self, amount: int = 1) -> None:
        pass


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
    skipped: list[str] = field(default_factory=list)  # a package's systems without BERT results
    systems: list[str] = field(default_factory=list)  # a package's BERT systems checked, in name order

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

    def about(self, system: str) -> CheckReport:
        """The part of a package's report about one system: its rows, its findings (and the package's own), its
        tools; its verdict is the system's."""
        org = self.target.resolve()
        own = {org / "results" / system, org / "systems" / f"{system}.json"}

        def mine(where: str) -> bool:
            path = Path(where).resolve()
            return path == org or path in own or bool(own & set(path.parents))
        part = CheckReport(self.target, self.kind, self.ruleset, self.division,
                           [row for row in self.rows if row.label.split("/", 1)[0] == system],
                           [f for f in self.findings if mine(f.where)], [t for t in self.tools if mine(t.target)],
                           {k: v for k, v in self.descriptions.items() if k == system}, systems=[system])
        return part


@dataclass(frozen=True)
class FolderJudgement:
    """The runs of one folder judged before the official tools: each log's findings and the folder's own. With
    the tools' verdicts (`rows`) it becomes the folder's verdict (`counted_findings`)."""

    folder: Path
    logs: tuple[ResultLog, ...]
    log_findings: tuple[tuple[Finding, ...], ...]
    findings: tuple[Finding, ...]

    @property
    def readable(self) -> bool:
        """Whether the official tools can read the folder (nothing in it blocks them)."""
        return not any(f.blocks for f in self.findings) and not any(f.blocks for found in self.log_findings
                                                                    for f in found)

    def rows(self, prefix: str, verdicts: dict[str, CheckResult]) -> list[LogRow]:
        """A row per log, with the compliance checker's verdict by log file name (none: not run)."""
        return [LogRow(prefix + log.path.name, log, found, verdicts.get(log.path.name))
                for log, found in zip(self.logs, self.log_findings)]

    def counts_before_tools(self) -> dict[str, RunCount]:
        """Each failing run's count from the logs alone (what `package` refuses before any tool runs)."""
        counts = {log.path.name: count_run(log, list(found)) for log, found in zip(self.logs, self.log_findings)}
        return {name: count for name, count in counts.items() if count.reason is not None}


def judge_logs(logs: list[ResultLog], division: str | None) -> tuple[tuple[Finding, ...], ...]:
    """Each log's problems (compliance.log_rules), and whether a value of it would name a file the official
    tools load (staging)."""
    found = [tuple(log_findings(log, division)) for log in logs]
    return tuple(own if any(f.blocks for f in own) else own + tuple(path_value_findings(log))
                 for log, own in zip(logs, found))


def judge_folder(folder: Path, logs: list[ResultLog], division: str | None, ruleset: str) -> FolderJudgement:
    """The one judgement of a folder's runs that `check`, `package`, `score` and `report` show: each log's problems
    (judge_logs) and the folder's."""
    return FolderJudgement(folder, tuple(logs), judge_logs(logs, division),
                           tuple(folder_findings(folder, logs, division, ruleset)))


def counted_findings(folder: Path, rows: list[LogRow]) -> list[Finding]:
    """What olympic scoring makes of the runs that do not count (compliance.folder_rules.dropped_runs)."""
    return dropped_runs(folder, {row.log.path.name: row.count for row in rows if row.count.reason is not None})


def logged_division(logs: list[ResultLog]) -> str | None:
    divisions = [log.division for log in logs]
    same = bool(divisions) and all(d == divisions[0] for d in divisions)
    return divisions[0] if same and divisions[0] in DIVISIONS else None


def rcp_tool_run(folder: Path, division: str | None, readable: bool, result: CheckResult | None,
                 missing: str = "not run") -> ToolRun:
    """The RCP checker's line for a folder: n/a for the open division, else its verdict or why there is none."""
    if division == "open":
        return ToolRun("RCP checker", str(folder), None, "applies to the closed division only", applies=False)
    if division is None:
        return ToolRun("RCP checker", str(folder), None, "not run: the division is unclear")
    if not readable:
        return ToolRun("RCP checker", str(folder), None, "not run: it would crash on or misjudge the logs; fix the "
                       "problems above first")
    return ToolRun("RCP checker", str(folder), result, "" if result is not None else missing)


