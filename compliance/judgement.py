"""Whether a result log tells the story of one run, and whether that run counts: judged by what the log says.

A sound log has exactly one run_start and one run_stop, in that order, and times that never go back; its
run_stop status is `success` or `aborted`, and a `success` is backed by an eval_accuracy at or above the log's
own target (`target_accuracy`, the descriptor's, logged before run_start; the closed division's is at least
the MLPerf target) between run_start and run_stop. A run counts when its log is sound, it converged and the
official compliance checker passes it. Olympic scoring may drop one run that does not count, but only a sound
log of a run that did not converge: a log that is not sound, or that the official checker fails for anything
but a missed target, never lets a folder pass. `check`, `package` and `score` all judge runs here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bert.mllog import ABORTED, SUCCESS, TARGET_ACCURACY
from bert.mlperf_rules import MLPERF_TARGET_ACCURACY
from compliance.checkers import CheckResult
from compliance.findings import ERROR, WARNING, Finding
from compliance.result_log import Event, ResultLog, number

# The one complaint of the official compliance checker about a closed-division run that missed the target (as
# mlperf-logging 4.1.68 words it): that run did not converge, which olympic scoring may drop.
_MISSED_TARGET = "Failed checks for eval_accuracy : (v['value'] >= "
_REDO = "the log was edited or written to by more than one run: keep one run per result file and rerun this one"


@dataclass(frozen=True)
class RunCount:
    """Whether a run counts: None when it does, else why not; `droppable` when olympic scoring may drop it."""

    reason: str | None
    droppable: bool = False


def _time_goes_back(events: tuple[Event, ...]) -> tuple[Event, Event] | None:
    """The first event logged at an earlier time than the one before it, with that one."""
    for before, after in zip(events, events[1:]):
        if after.time_ms < before.time_ms:
            return before, after
    return None


def _target(log: ResultLog) -> tuple[float | None, str | None]:
    """(the accuracy a success must reach, what is wrong with the logged target): the logged target_accuracy,
    raised to the MLPerf target in the closed division (whose rules fix it)."""
    logged = log.values(TARGET_ACCURACY)
    closed = log.division == "closed"
    if not logged:
        return (MLPERF_TARGET_ACCURACY, None) if closed else (None, f"no {TARGET_ACCURACY} line")
    values = {number(v) for v in logged}
    if len(values) != 1 or None in values or not 0 < min(values) < 1:
        return None, f"{TARGET_ACCURACY} logged as {', '.join(map(repr, logged))}, not one number between 0 and 1"
    target = values.pop()
    return (max(target, MLPERF_TARGET_ACCURACY) if closed else target), None


def _success_backed(log: ResultLog, start: Event, stop: Event) -> list[Finding]:
    where = str(log.path)
    target, problem = _target(log)
    if problem:
        return [Finding(where, f"run_stop says success, but {problem}: the log does not say what success means, "
                        "so it cannot count; rerun it with this harness (the trainer logs the target before "
                        "run_start)")]
    accuracies = [number(e.value) for e in log.all("eval_accuracy") if start.lineno < e.lineno < stop.lineno]
    reached = [a for a in accuracies if a is not None and a >= target]
    if not reached:
        best = max((a for a in accuracies if a is not None), default=None)
        best_text = "none" if best is None else f"{best:.4f}"
        return [Finding(where, f"run_stop says success, but no eval_accuracy between run_start and run_stop "
                        f"reached the target {target} (best: {best_text}); the log contradicts itself and does not "
                        "count")]
    return []


def judge_run(log: ResultLog) -> list[Finding]:
    """What the log says about its run: an error when it is not the sound log of one run (see the module), a
    warning when the run did not converge."""
    where = str(log.path)
    starts, stops = log.all("run_start"), log.all("run_stop")
    if not starts:
        return [Finding(where, "no run_start line: the run never started timing, so it has no time to score")]
    if len(starts) > 1:
        return [Finding(where, f"{len(starts)} run_start lines: the file holds several runs (a log written to "
                        "twice?); keep one run per result file")]
    if not stops:
        return [Finding(where, "no run_stop line: the log is truncated (the run crashed, was killed or is still "
                        "running) and does not count; rerun it")]
    if len(stops) > 1:
        statuses = ", ".join(str(e.metadata.get("status")) for e in stops)
        return [Finding(where, f"{len(stops)} run_stop lines (status {statuses}): a run stops once; {_REDO}")]
    start, stop = starts[0], stops[0]
    if stop.lineno < start.lineno or stop.time_ms < start.time_ms:
        return [Finding(where, f"run_stop (line {stop.lineno}, time_ms {stop.time_ms:.0f}) is not after run_start "
                        f"(line {start.lineno}, time_ms {start.time_ms:.0f}); {_REDO}")]
    back = _time_goes_back(log.events)
    if back is not None:
        before, after = back
        return [Finding(where, f"line {after.lineno} ({after.key}) is logged at time_ms {after.time_ms:.0f}, before "
                        f"line {before.lineno} ({before.key}) at {before.time_ms:.0f}; times in a log only go "
                        f"forward: {_REDO}")]
    if log.status == SUCCESS:
        return _success_backed(log, start, stop)
    if log.status != ABORTED:
        return [Finding(where, f"run_stop status {log.status!r} is neither {SUCCESS!r} nor {ABORTED!r}")]
    reason = stop.metadata.get("reason")
    return [Finding(where, f"did not converge (run_stop status {log.status!r}{f': {reason}' if reason else ''}); "
                    "under olympic scoring one such run can be the dropped slowest, two invalidate the submission",
                    WARNING)]


def _only_missed_the_target(result: CheckResult) -> bool:
    problems = result.problems()
    return bool(problems) and all(p.startswith(_MISSED_TARGET) for p in problems)


def count_run(log: ResultLog, findings: list[Finding], compliance: CheckResult | None = None) -> RunCount:
    """Whether the run of `log` counts, given its findings (precheck.log_findings, which include judge_run) and
    the official compliance checker's verdict when it ran."""
    errors = [f.message for f in findings if f.level == ERROR]
    if errors:
        return RunCount(errors[0])
    if compliance is not None and not compliance.passed:
        missed = not log.converged and _only_missed_the_target(compliance)
        return RunCount("did not converge" if missed else "fails the compliance checker", droppable=missed)
    return RunCount(None) if log.converged else RunCount("did not converge", droppable=True)


def dropped_runs(folder: Path, failing: dict[str, RunCount]) -> list[Finding]:
    """Olympic scoring drops one run that did not converge (as the slowest), if its log is sound; a log that is
    not, or a second run that does not count, fails the submission."""
    unsound = [(name, count.reason) for name, count in failing.items() if not count.droppable]
    if unsound:
        (name, reason), more = unsound[0], len(unsound) - 1
        return [Finding(str(folder), f"{name} does not count ({reason}){f', nor do {more} more' if more else ''}; "
                        "only the sound log of a run that did not converge can be the run olympic scoring drops")]
    if len(failing) == 1:
        (name, count), = failing.items()
        return [Finding(str(folder), f"1 run does not count ({name}: {count.reason}); olympic scoring accepts it as "
                        "the dropped slowest run", WARNING)]
    if len(failing) > 1:
        return [Finding(str(folder), f"{len(failing)} runs do not count ({', '.join(failing)}: see each log's "
                        "problems); olympic scoring drops at most one")]
    return []
