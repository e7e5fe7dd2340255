"""The official tools on the staged copies of what the harness judged (compliance.staging), all in one process of
their own (compliance.tool_runner), and what they said of each system kept for the next command
(compliance.tool_cache).

A package is checked one system at a time, each as a package of its own: the package checker's verdict is then
the system's, and the package's is that of all its systems together (the package checker judges each system's
JSON and results folder on their own, so the verdicts are the same as one run over them all). Within each
package checker run, the verdicts of the compliance checker on each log, of the system description checker and
of the RCP checker are those the package checker itself got. The outputs name the submission's files, not the
copies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bert.mlperf_rules import BENCHMARK
from compliance import tool_cache
from compliance.checkers import PACKAGE_SUCCESS, CheckResult, SummaryRow, require_ruleset, summary_rows

HARNESS_ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDER = "\0ORG\0"  # where a cached output named the staged copy of the package
Advance = Callable[[int], None]


@dataclass(frozen=True)
class SystemJob:
    name: str  # the system: systems/<name>.json and results/<name>/bert/
    staged: Path  # the ORG folder of its staged package (compliance.staging)
    org: Path  # the submission's ORG folder, which the outputs name


@dataclass(frozen=True)
class SystemTools:
    """What the official tools said of one system."""

    package: CheckResult | None  # the package checker, on this system alone (None: it does not get the system)
    logs: dict[str, CheckResult]  # the compliance checker within it, by log file name
    system: CheckResult | None  # the system description checker within it
    rcp: CheckResult | None  # the RCP checker within it (closed division only)
    summary: tuple[SummaryRow, ...] = ()  # the result summarizer's rows, when asked
    summarizer_output: str = ""


def _runner_env() -> dict[str, str]:
    """This checkout's compliance package first on the path, whatever else is installed."""
    paths = [str(HARNESS_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(paths))


def run_tools(request: dict, timeout: float, advance: Advance) -> tuple[dict, str]:
    """compliance.tool_runner on `request` in a scratch folder: (its result, "" or why there is none). Each step
    it finishes advances the progress; it is killed after `timeout` seconds (or when the caller is interrupted)."""
    with tempfile.TemporaryDirectory(prefix="mlperf-tools-") as scratch:
        work, request_file = Path(scratch) / "work", Path(scratch) / "request.json"
        result_file, errors_file = Path(scratch) / "result.json", Path(scratch) / "errors.txt"
        work.mkdir()
        request_file.write_text(json.dumps(request))
        with open(errors_file, "wb") as errors:
            proc = subprocess.Popen([sys.executable, "-m", "compliance.tool_runner", str(request_file),
                                     str(result_file)], cwd=work, stdout=subprocess.PIPE, stderr=errors, text=True,
                                    env=_runner_env())
            timer = threading.Timer(timeout, proc.kill)
            timer.start()
            try:
                for line in proc.stdout:
                    if line.strip() == "done":
                        advance(1)
                proc.wait()
            finally:
                timer.cancel()
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
        if proc.returncode == 0 and result_file.is_file():
            return json.loads(result_file.read_text()), ""
        said = errors_file.read_text(errors="replace").strip().splitlines()[-5:]
        why = (f"the official tools did not finish within {timeout:.0f} s" if proc.returncode == -9
               else f"the official tools stopped with exit status {proc.returncode}")
        return {}, "\n".join([why, *said])


def _replaced(value, old: str, new: str):
    """`value` (JSON data) with `old` replaced by `new` in every string."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [_replaced(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _replaced(v, old, new) for k, v in value.items()}
    return value


def _result(tool: str, target: Path, found: dict | None) -> CheckResult | None:
    return None if found is None else CheckResult(tool, str(target), bool(found["passed"]), found["output"])


def _system_tools(job: SystemJob, entry: dict, failure: str) -> SystemTools:
    entry = _replaced(entry, PLACEHOLDER, str(job.org))
    folder = job.org / "results" / job.name
    found = entry.get("package")
    if found is None:
        return SystemTools(CheckResult("package checker", str(folder), False, failure or "not run"), {}, None, None,
                           summarizer_output=failure)
    logs = {name: _result("compliance checker", folder / BENCHMARK / name, result)
            for name, result in found["logs"].items()}
    summary = entry.get("summary", {"output": failure, "records": []})
    return SystemTools(CheckResult("package checker", str(folder), PACKAGE_SUCCESS in found["output"], found["output"]),
                       logs, _result("system description checker", job.org / "systems" / f"{job.name}.json",
                                     found["system"]),
                       _result("RCP checker", folder / BENCHMARK, found["rcp"]), summary_rows(summary["records"]),
                       summary["output"])


def _restore(staged: Path, written: dict[str, str]) -> None:
    """What the package checker wrote into the copies (scaling.json), for the summarizer that reads it."""
    for name, text in written.items():
        target = (staged / name).resolve()
        if staged.resolve() in target.parents and target.name == "scaling.json":
            target.write_text(text)


def run_systems(jobs: list[SystemJob], ruleset: str, summarize: bool,
                advance: Advance | None = None) -> dict[SystemJob, SystemTools]:
    """The package checker (and with `summarize` the result summarizer) on each system's staged package, or what
    they said of the same files before."""
    ruleset, advance = require_ruleset(ruleset), advance or (lambda amount: None)
    keys = {job: tool_cache.key(job.staged, ruleset) for job in jobs}
    entries = {job: tool_cache.load(keys[job]) for job in jobs}
    asks = []
    for job in jobs:
        entry = entries[job]
        ask = {"org": str(job.staged), "package": "package" not in entry,
               "summarize": summarize and "summary" not in entry}
        if ask["package"] or ask["summarize"]:
            if not ask["package"]:
                _restore(job.staged, entry["package"]["written"])
            asks.append((job, ask))
        else:
            advance(1)
    failure = ""
    if asks:
        result, failure = run_tools({"ruleset": ruleset, "systems": [ask for _, ask in asks]},
                                    600 + 120 * len(asks), advance)
        for job, ask in asks:
            found = result.get("systems", {}).get(ask["org"])
            if found is None:
                continue
            found = _replaced(found, str(job.staged), PLACEHOLDER)
            summary = found.pop("summary", None)
            entry = dict(entries[job], **({"package": found} if ask["package"] else {}))
            entries[job] = dict(entry, **({"summary": summary} if summary is not None else {}))
            tool_cache.store(keys[job], entries[job])
    return {job: _system_tools(job, entries[job], failure) for job in jobs}


def run_logs(logs: dict[Path, Path], rcp_folders: dict[Path, Path], ruleset: str,
             advance: Advance | None = None) -> tuple[dict[Path, CheckResult], dict[Path, CheckResult]]:
    """The compliance checker on each staged log and the RCP checker on each staged folder (each a copy of the
    original it maps to); their verdicts by original."""
    ruleset, advance = require_ruleset(ruleset), advance or (lambda amount: None)
    request = {"ruleset": ruleset, "logs": [str(copy) for copy in logs], "rcp_folders": [str(c) for c in rcp_folders]}
    result, failure = run_tools(request, 600 + 30 * len(logs), advance) if logs or rcp_folders else ({}, "")

    def verdicts(kind: str, tool: str, copies: dict[Path, Path]) -> dict[Path, CheckResult]:
        found = {}
        for copy, original in copies.items():
            said = result.get(kind, {}).get(str(copy), {"passed": False, "output": failure})
            said = _replaced(said, str(copy), str(original))
            found[original] = CheckResult(tool, str(original), bool(said["passed"]), said["output"])
        return found
    return verdicts("logs", "compliance checker", logs), verdicts("rcp", "RCP checker", rcp_folders)
