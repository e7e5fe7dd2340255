"""`mlperf-bert check PATH`: a result log, a folder of result logs, a submission (an ORG folder) or a folder of
submissions (a results repository), checked the way the reviewers check it, after the harness's own rules (of
each log: compliance.log_rules; of the runs of a folder: compliance.folder_rules; of a package:
compliance.package_rules and compliance.provenance).

Only BERT is checked: in a submission, the systems with a `results/<name>/bert/` folder (or those picked by name,
compliance.targets); the others are named once, as skipped. Every log is read once, into a copy that the official
tools then get (compliance.staging), and judged once (compliance.verdict); the official tools run once per system
(compliance.tool_runs: the package checker on each system as a package of its own, with the result summarizer for
`score`; for a folder or a log, the compliance checker and the RCP checker), in a few processes side by side for a
round. `package`, `score`, `report` and `review` show this verdict.
"""

from __future__ import annotations

import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from bert.mlperf_rules import BENCHMARK, DEFAULT_RULESET, DIVISIONS
from compliance.checkers import CheckResult, Scoring, require_ruleset
from compliance.findings import WARNING, Finding
from compliance.package_rules import layout_findings, package_judgement, platform_findings, read_system_json
from compliance.provenance import package_provenance
from compliance.result_log import result_logs_in
from compliance.staging import Staging, read_staged
from compliance.targets import bert_systems, find_package, find_packages, pick_systems
from compliance.tool_runs import SystemJob, SystemTools, run_logs, run_systems
from compliance.verdict import (
    CheckReport,
    FolderJudgement,
    LogRow,
    Progress,
    TargetError,
    ToolRun,
    counted_findings,
    judge_folder,
    judge_logs,
    logged_division,
    rcp_tool_run,
)

__all__ = ["CheckReport", "LogRow", "Progress", "TargetError", "ToolRun", "TreeCheck", "check", "check_tree",
           "find_package"]
NOT_HANDED = "not run: the harness does not hand this system to the tools; fix the problems above first"


@dataclass
class TreeCheck:
    """The check of everything at PATH: one report per submission (or one for a log or a folder of logs)."""

    target: Path
    ruleset: str
    reports: list[CheckReport]
    skipped: list[str] = field(default_factory=list)  # submissions at PATH without BERT results

    @property
    def passed(self) -> bool:
        return bool(self.reports) and all(report.passed for report in self.reports)


@dataclass
class _Judged:
    """A submission between its judgement and the official tools' verdicts."""

    report: CheckReport
    folders: dict[str, FolderJudgement]  # by system
    divisions: dict[str, str | None]
    jobs: list[SystemJob]  # the systems handed to the package checker
    loose: list[SystemJob] = field(default_factory=list)  # readable logs of systems it does not get (their JSON)


def _system_division(description: dict | None) -> str | None:
    division = description.get("division") if description is not None else None
    return division if division in DIVISIONS else None


def _grouped(org: Path, findings: list[Finding]) -> list[Finding]:
    """The same warning about several system JSONs said once, where the first of them was said (a published org
    repeats its JSONs' fields: NVIDIA's v5.0 JSONs all carry framework_name)."""
    def about_json(f: Finding) -> bool:
        return f.level == WARNING and Path(f.where).parent == org / "systems" and f.where.endswith(".json")
    same: dict[str, list[Finding]] = {}
    for finding in filter(about_json, findings):
        same.setdefault(finding.message, []).append(finding)
    grouped = []
    for finding in findings:
        group = same.get(finding.message, []) if about_json(finding) else [finding]
        if len(group) == 1:
            grouped.append(finding)
        elif group and group[0] is finding:
            names = ", ".join(Path(f.where).name for f in group)
            grouped.append(Finding(str(org / "systems"), f"{finding.message} (in {len(group)} system JSONs: {names})",
                                   WARNING))
    return grouped


def _read_systems(report: CheckReport, org: Path, packages: dict[str, Path], staging: Staging) -> set[str]:
    """Each BERT system's JSON, read once and, when the tools can read it, copied for them; returns the systems
    whose JSON is missing or unreadable to the tools."""
    unreadable = set()
    for name, package in packages.items():
        path = org / "systems" / f"{name}.json"
        if not path.exists() and not path.is_symlink():
            unreadable.add(name)  # package_rules.layout_findings names it
            continue
        description, found = read_system_json(path)
        report.findings += found
        if description is not None:
            report.descriptions[name] = description
        if description is None or any(f.blocks for f in found):
            unreadable.add(name)
        else:
            staging.write_system_json(package, name, description)
    return unreadable


def _read_runs(report: CheckReport, org: Path, name: str, package: Path, staging: Staging,
               progress: Progress) -> tuple[FolderJudgement | None, str | None]:
    """One system's logs, read once into their copies and judged: (the judgement, the division they are judged
    as); no judgement for a results folder that is a link."""
    bench = org / "results" / name / BENCHMARK
    link = next((p for p in (bench.parent, bench) if p.is_symlink()), None)
    if link is not None:
        report.findings.append(Finding(str(link), f"is a symbolic link (to {os.readlink(link)}), not a folder; a "
                                       "submission holds its results themselves: replace the link with the folder "
                                       "it points to", blocks=True))
        return None, None
    logs = []
    for path in result_logs_in(bench):
        logs.append(read_staged(path, staging.log_copy(package, name, path)))
        progress.advance()
    system_division = _system_division(report.descriptions.get(name))
    if report.division is not None and system_division is not None and report.division != system_division:
        report.findings.append(Finding(str(org / "systems" / f"{name}.json"), f"division is {system_division!r}, but "
                                       f"the package is checked as {report.division!r}"))
    division = system_division or report.division or logged_division(logs)
    judged = judge_folder(bench, logs, division, report.ruleset)
    report.findings += judged.findings
    return judged, division


def _judge_package(org: Path, index: int, staging: Staging, ruleset: str, division: str | None,
                   picked: list[str] | None, progress: Progress) -> _Judged:
    """A submission's BERT systems read, copied and judged; the jobs for the tools are the systems they can read."""
    report = CheckReport(org, "package", ruleset, division)
    found = layout_findings(org)
    report.findings += found
    names, report.skipped = bert_systems(org)
    report.systems = [n for n in names if picked is None or n in picked]
    if not names and not any(f.blocks for f in found):
        report.findings.append(Finding(str(org), f"no system has BERT results (results/<system>/{BENCHMARK}/); "
                                       "there is nothing to check", blocks=True))
    packages = {name: staging.system_package(index, org, name) for name in report.systems}
    unreadable = _read_systems(report, org, packages, staging)
    folders, divisions = {}, {}
    for name in report.systems:
        judged, divisions[name] = _read_runs(report, org, name, packages[name], staging, progress)
        if judged is None or not judged.readable:
            unreadable.add(name)
        if judged is not None:
            folders[name] = judged
    runs = {name: list(judged.logs) for name, judged in folders.items()}
    report.findings += platform_findings(org, report.descriptions, runs)
    report.findings += package_judgement(org, report.descriptions, runs)
    report.findings += package_provenance(org, report.descriptions, runs)
    report.findings = _grouped(org, report.findings)
    unreadable |= {Path(f.where).name for f in report.findings if f.blocks and Path(f.where).parent.name == "results"}
    whole = any(f.blocks and Path(f.where) == org for f in report.findings)
    judged = _Judged(report, folders, divisions, [])
    for name, package in packages.items():
        if not whole and name not in unreadable and name in report.descriptions:
            judged.jobs.append(SystemJob(name, package, org))
        elif name in folders and folders[name].readable:  # its logs alone: the compliance and RCP checkers
            judged.loose.append(SystemJob(name, package, org))
        else:
            staging.discard(package)
    return judged


def _finish_package(judged: _Judged, tools: dict[SystemJob, SystemTools], score: bool) -> CheckReport:
    """The tools' verdicts added to a submission's judgement: its rows, what olympic scoring makes of them, the
    tools' lines, and for `score` the summarizer's rows."""
    report, org = judged.report, judged.report.target
    said = {job.name: tools[job] for job in judged.jobs + judged.loose if job in tools}
    for name in report.systems:
        system_json, own = org / "systems" / f"{name}.json", said.get(name)
        if name in report.descriptions:
            checked = own.system if own is not None else None
            report.tools.append(ToolRun("system description checker", str(system_json), checked,
                                        "" if checked is not None else NOT_HANDED))
        folder = judged.folders.get(name)
        if folder is not None:
            rows = folder.rows(f"{name}/", own.logs if own is not None else {})
            report.rows += rows
            report.findings += counted_findings(folder.folder, rows)
            report.tools.append(rcp_tool_run(folder.folder, judged.divisions[name], own is not None,
                                             own.rcp if own is not None else None,
                                             "not run: the package checker stopped before it"))
        package = own.package if own is not None else None
        report.tools.append(ToolRun("package checker", str(org / "results" / name), package,
                                    "" if package is not None else NOT_HANDED))
    if not report.systems:
        report.tools.append(ToolRun("package checker", str(org), None, "not run: there is no BERT system to check"))
    runs = [said[job.name] for job in judged.jobs if job.name in said]
    if score and runs:
        package = CheckResult("package checker", str(org), all(r.package.passed for r in runs),
                              "\n".join(r.package.output for r in runs))
        report.scoring = Scoring(package, "\n".join(r.summarizer_output for r in runs),
                                 tuple(row for r in runs for row in r.summary))
    return report


def _chunks(jobs: list[SystemJob], count: int) -> list[list[SystemJob]]:
    """The jobs in `count` groups of about equal log bytes (one process of the tools each)."""
    def size(job: SystemJob) -> int:
        return sum(p.stat().st_size for p in job.staged.rglob("*") if p.is_file())
    sizes = {job: size(job) for job in jobs}
    loads, groups = [0] * max(1, count), [[] for _ in range(max(1, count))]
    for job in sorted(jobs, key=sizes.get, reverse=True):
        least = loads.index(min(loads))
        loads[least] += sizes[job]
        groups[least].append(job)
    return [group for group in groups if group]


def _run_loose(loose: list[tuple[SystemJob, bool]], ruleset: str, progress: Progress) -> dict[SystemJob, SystemTools]:
    """The compliance checker on each log and (`True`: closed division) the RCP checker on the folder of systems
    that the package checker does not get."""
    def bench(job: SystemJob, root: Path) -> Path:
        return root / "results" / job.name / BENCHMARK
    logs = {copy: bench(job, job.org) / copy.name for job, _ in loose
            for copy in bench(job, job.staged).glob("result_*.txt")}
    folders = {bench(job, job.staged): bench(job, job.org) for job, closed in loose if closed}
    verdicts, rcp = run_logs(logs, folders, ruleset)
    progress.advance(len(loose))
    return {job: SystemTools(None, {p.name: v for p, v in verdicts.items() if p.parent == bench(job, job.org)}, None,
                             rcp.get(bench(job, job.org))) for job, _ in loose}


def _run_package_tools(judged: list[_Judged], ruleset: str, score: bool,
                       progress: Progress) -> dict[SystemJob, SystemTools]:
    jobs = [job for one in judged for job in one.jobs]
    loose = [(job, one.divisions[job.name] == "closed") for one in judged for job in one.loose]
    progress.step("official tools" + (" and result summarizer" if score else ""), len(jobs) + len(loose))
    chunks = _chunks(jobs, min(len(jobs), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=max(1, len(chunks) + bool(loose))) as pool:
        futures = [pool.submit(run_systems, chunk, ruleset, score, progress.advance) for chunk in chunks]
        futures += [pool.submit(_run_loose, loose, ruleset, progress)] if loose else []
        return {job: found for future in futures for job, found in future.result().items()}


def _check_packages(orgs: list[Path], ruleset: str, division: str | None, score: bool,
                    picked: dict[Path, list[str]] | None, progress: Progress) -> list[CheckReport]:
    def logs_of(org: Path) -> int:
        names = bert_systems(org)[0] if picked is None else picked.get(org, [])
        return sum(len(result_logs_in(org / "results" / n / BENCHMARK)) for n in names
                   if not (org / "results" / n).is_symlink() and not (org / "results" / n / BENCHMARK).is_symlink())
    progress.step("reading and judging logs", sum(logs_of(org) for org in orgs))
    with tempfile.TemporaryDirectory(prefix="mlperf-check-") as scratch:
        staging = Staging(Path(scratch))
        judged = [_judge_package(org, index, staging, ruleset, division, None if picked is None else picked[org],
                                 progress) for index, org in enumerate(orgs)]
        tools = _run_package_tools(judged, ruleset, score, progress)
        return [_finish_package(one, tools, score) for one in judged]


def _check_alone(path: Path, kind: str, ruleset: str, division: str | None, progress: Progress) -> CheckReport:
    """A result log, or a folder of result logs, checked on its own: the compliance checker on each log and, for a
    folder of the closed division, the RCP checker."""
    report = CheckReport(path, kind, ruleset, division)
    sources = [path] if kind == "log" else result_logs_in(path)
    progress.step("reading and judging logs", len(sources))
    with tempfile.TemporaryDirectory(prefix="mlperf-check-") as scratch:
        copies, logs = Staging(Path(scratch)).folder(0), []
        for source in sources:
            logs.append(read_staged(source, copies / source.name))
            progress.advance()
        folder = judge_folder(path, logs, division or logged_division(logs), ruleset) if kind == "folder" else None
        found = folder.log_findings if folder is not None else judge_logs(logs, division)
        checkable = {copies / log.path.name: log.path for log, own in zip(logs, found)
                     if not any(f.blocks for f in own)}
        rcp = folder is not None and folder.readable and (division or logged_division(logs)) == "closed"
        progress.step("official tools", len(checkable))
        verdicts, rcp_verdicts = run_logs(checkable, {copies: path} if rcp else {}, ruleset, progress.advance)
    rows = [LogRow(log.path.name, log, own, verdicts.get(log.path)) for log, own in zip(logs, found)]
    report.rows += rows
    if folder is not None:
        report.findings += [*folder.findings, *counted_findings(path, rows)]
        report.tools.append(rcp_tool_run(path, division or logged_division(logs), folder.readable,
                                         rcp_verdicts.get(path)))
    return report


def _refuse_file(path: Path, score: bool, systems: list[str] | None) -> None:
    if score or systems:
        raise TargetError(f"{path}: is a file, not a submission (an ORG folder with systems/ and results/) nor a "
                          f"folder of them; check a result log with `mlperf-bert check {path}`")


def check_tree(path: str | Path, ruleset: str = DEFAULT_RULESET, division: str | None = None,
               progress: Progress | None = None, score: bool = False, systems: list[str] | None = None) -> TreeCheck:
    """Checks everything at PATH (and, with `score`, scores it: CheckReport.scoring): a result log, a folder of
    result logs, a submission, or a folder of submissions; `systems` picks systems by name. Raises TargetError or
    RulesetError for a PATH or ruleset it cannot check."""
    path, ruleset, progress = Path(path), require_ruleset(ruleset), progress or Progress()
    if division is not None and division not in DIVISIONS:
        raise TargetError(f"--division {division!r}: use 'closed' or 'open'")
    if not path.exists():
        raise TargetError(f"{path}: no such file or folder")
    if not path.is_dir():
        _refuse_file(path, score, systems)
        return TreeCheck(path, ruleset, [_check_alone(path, "log", ruleset, division, progress)])
    orgs = find_packages(path)
    if not orgs:
        if not score and not systems and result_logs_in(path):
            return TreeCheck(path, ruleset, [_check_alone(path, "folder", ruleset, division, progress)])
        raise TargetError(f"{path}: neither a result log, a folder of result_*.txt logs, a submission (ORG/systems/"
                          f"<name>.json and ORG/results/<name>/{BENCHMARK}/result_*.txt), nor a folder of submissions")
    picked = pick_systems(orgs, systems)
    checked = [org for org in orgs if (org in picked if picked is not None else len(orgs) == 1 or bert_systems(org)[0])]
    if not checked:
        raise TargetError(f"{path}: none of its {len(orgs)} submissions has BERT results "
                          f"(ORG/results/<system>/{BENCHMARK}/)")
    reports = _check_packages(checked, ruleset, division, score, picked, progress)
    without_bert = [org.name for org in orgs if org not in checked and not bert_systems(org)[0]]
    return TreeCheck(path, ruleset, reports, without_bert)


def check(path: str | Path, ruleset: str = DEFAULT_RULESET, division: str | None = None,
          progress: Progress | None = None, score: bool = False, systems: list[str] | None = None) -> CheckReport:
    """check_tree for a PATH that holds one thing to check (a log, a folder of logs or one submission)."""
    tree = check_tree(path, ruleset, division, progress, score, systems)
    if len(tree.reports) != 1:
        names = ", ".join(report.target.name for report in tree.reports)
        raise TargetError(f"{path}: holds {len(tree.reports)} submissions with BERT results ({names}); check them "
                          "together with check_tree, or one at a time")
    return tree.reports[0]
