"""The short summary that ends run_and_time.sh's console (`mlperf-bert log summary`): per result file its outcome,
its time from run_start to run_stop (what MLPerf scores; the RESULT line's seconds are the launcher's wall time,
start-up included) and the official compliance checker's verdict on it (compliance.checkers, run as reviewers
run it); then the command to run next: `check` of the folder, or `package` once it holds a submission's runs."""

from __future__ import annotations

import shlex
from pathlib import Path

from bert.mlperf_rules import DEFAULT_RULESET
from compliance.checkers import USAGE, compliance_check
from compliance.folder_rules import RUNS
from compliance.result_log import ResultLog, read_result_log, result_logs_in


def _outcome(log: ResultLog) -> str:
    """How the run ended, its last eval and its time to train, in words."""
    if log.unreadable:
        return f"not read ({log.unreadable})"
    status = log.status
    if status is None:
        return "no run_stop (not a finished log)"
    evals = log.evals
    reached = f", mlm accuracy {evals[-1].accuracy:.4f} at {evals[-1].samples:,.0f} samples" if evals else ""
    minutes = log.run_minutes
    timed = f", {minutes * 60:.1f} s from run_start to run_stop" if minutes is not None else ""
    reason = log.first("run_stop").metadata.get("reason") if status != "success" else None
    return f"{status}{reached}{timed}" + (f" ({reason})" if reason else "")


def _verdict(path: Path, ruleset: str) -> str:
    """PASS, or FAIL with the checker's first words on what failed (`check` shows all it says)."""
    result = compliance_check(path, ruleset)
    if result.passed:
        return "PASS"
    problems = result.problems()
    if not problems:
        return "FAIL"
    failed = next((line for line in problems if line.startswith("failed test:")), None)
    return "FAIL: " + " ".join(problems[0].removesuffix(":").split()) + (f" ({' '.join(failed.split())})"
                                                                          if failed else "")


def next_command(folder: Path, system: str) -> str:
    """What to run after runs of `system` (as the user named it) that logged into `folder`."""
    runs, quoted = len(result_logs_in(folder)), shlex.quote(str(folder))
    if runs == RUNS:
        return (f"mlperf-bert package {quoted} --system {shlex.quote(system)} -o submission  (the folder holds the "
                f"{RUNS} runs of a submission)")
    if runs < RUNS:
        return (f"mlperf-bert check {quoted}  ({runs} of the {RUNS} runs a submission takes; NEXP={RUNS - runs} "
                f"./run_and_time.sh {shlex.quote(system)} adds the others)")
    return f"mlperf-bert check {quoted}  ({runs} runs: a submission takes {RUNS} consecutive ones)"


def summary_lines(logs: list[Path], system: str, ruleset: str = DEFAULT_RULESET) -> list[str]:
    """The summary of the runs that wrote `logs`, and the next command (for their first log's folder)."""
    if not logs:
        return []
    lines = [f"summary (official compliance checker: {USAGE} {ruleset}):"]
    for path in logs:
        log = read_result_log(path)  # a file that is no regular file (a FIFO) is not read, nor given to the checker
        verdict = "not run" if log.unreadable else _verdict(path, ruleset)
        lines.append(f"  {path}: {_outcome(log)}; checker {verdict}")
    lines.append(f"next: {next_command(logs[0].parent, system)}")
    return lines
