"""Whether result logs are the honest record of genuine runs, and which runs count: every rule about what a log
says, calibrated on the published BERT results of MLPerf Training v4.1 and v5.0 (630 logs of 63 systems, all
accepted by the official tools; benchmarks/published_results.py runs `check` and `score` on them).

What genuine logs do, and is therefore accepted: every rank may log init_start and cache_clear (512 times in a
512-GPU run), a few ms out of order, and nodes' clocks differ (lines before run_start go back by up to 2.8 s in
Dell's 2-node runs); hyperparameters and the seed may come after run_start; one run of ten may fail (miss the
target, take more than 30 minutes to initialise, or stop without run_stop), and the package checker drops it
under olympic scoring. What no genuine run writes, and is refused even where the official tools pass it or would
drop it: a second run_start or run_stop, run_stop before run_start, a line between run_start and run_stop that
goes back by more than nodes' clocks differ, a run that trains and evaluates in no time, an accuracy or a time
that is no measurement, a `success` that the log's own evals do not back, and more than one copy of a run (logs
identical to the millisecond; the one copy a published submission holds is named in a warning). A log edited
consistently (every time shifted alike, a value changed everywhere) is undetectable here, as it is for the
official tools: an unsigned log proves nothing about who wrote it.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from bert.mllog import ABORTED, SUCCESS, TARGET_ACCURACY
from bert.mlperf_rules import MLPERF_TARGET_ACCURACY
from compliance.checkers import CheckResult
from compliance.findings import ERROR, WARNING, Finding
from compliance.result_log import Event, ResultLog, number

# How far a line between run_start and run_stop may go back: about twice what nodes' clocks differ by in the
# published logs (2.8 s; no published line between run_start and run_stop goes back at all).
CLOCK_SKEW_MS = 5_000
LATEST_TIME_MS = 4_102_444_800_000  # 2100-01-01: a time_ms after it is no clock's reading
_EDITED = "no genuine run writes this: the log was edited or holds more than one run; keep one run per result " \
          "file and rerun this one"
_DROPPABLE = ("the run does not count; olympic scoring may drop it as the slowest run (the package checker does), "
              "a second run that does not count fails the submission")


@dataclass(frozen=True)
class RunCount:
    """Whether a run counts: None when it does, else why not; `droppable` when olympic scoring may drop it."""

    reason: str | None
    droppable: bool = False


def _impossible_value(log: ResultLog) -> Finding | None:
    """A time that no clock reads or an accuracy that is no fraction (the official tools take both as they are)."""
    for e in log.events:
        if not (math.isfinite(e.time_ms) and 0 <= e.time_ms < LATEST_TIME_MS):
            return Finding(str(log.path), f"line {e.lineno} ({e.key}) has time_ms {e.time_ms!r}, which no clock "
                           f"reads (milliseconds since 1970, before 2100); {_EDITED}")
        accuracy = number(e.value) if e.key == "eval_accuracy" else None
        if accuracy is not None and not (math.isfinite(accuracy) and 0 <= accuracy <= 1):
            return Finding(str(log.path), f"line {e.lineno}: eval_accuracy {accuracy!r} is no accuracy (a fraction "
                           f"of the masked tokens, between 0 and 1); {_EDITED}")
    return None


def _timed(log: ResultLog, start: Event, stop: Event) -> list[Event]:
    return [e for e in log.events if start.lineno <= e.lineno <= stop.lineno]


def _goes_back(timed: list[Event]) -> str | None:
    latest = timed[0]
    for e in timed[1:]:
        if latest.time_ms - e.time_ms > CLOCK_SKEW_MS:
            return (f"line {e.lineno} ({e.key}) is logged {(latest.time_ms - e.time_ms) / 1000:,.1f} s before line "
                    f"{latest.lineno} ({latest.key}) above it, between run_start and run_stop; nodes' clocks differ "
                    f"by seconds (up to {CLOCK_SKEW_MS / 1000:.0f} s is taken for that), and the timed lines of a run "
                    f"go forward: {_EDITED}")
        if e.time_ms > latest.time_ms:
            latest = e
    return None


def _no_time_taken(timed: list[Event], start: Event, stop: Event) -> str | None:
    if stop.time_ms == start.time_ms:
        return ("run_stop is logged at run_start's time: the run trained and evaluated in no time. The official tools "
                f"score it 0 minutes; {_EDITED}")
    early = next((e for e in timed if e.key == "eval_accuracy" and e.time_ms <= start.time_ms), None)
    if early is not None:
        return (f"eval_accuracy on line {early.lineno} is logged at run_start's time (or before): samples trained in "
                f"no time; {_EDITED}")
    return None


def _target(log: ResultLog) -> tuple[float | None, str | None]:
    """(the accuracy a success must reach, what is wrong with the logged target): the logged target_accuracy,
    raised to the MLPerf target in the closed division (whose rules fix it)."""
    logged = log.values(TARGET_ACCURACY)
    if not logged:
        return (MLPERF_TARGET_ACCURACY if log.division == "closed" else None), None
    values = {number(v) for v in logged}
    if len(values) != 1 or None in values or not 0 < min(values) < 1:
        return None, f"{TARGET_ACCURACY} logged as {', '.join(map(repr, logged))}, not one number between 0 and 1"
    target = values.pop()
    return (max(target, MLPERF_TARGET_ACCURACY) if log.division == "closed" else target), None


def _success_backed(log: ResultLog, timed: list[Event]) -> list[Finding]:
    where = str(log.path)
    target, problem = _target(log)
    if problem:
        return [Finding(where, f"run_stop says success, but {problem}: the log does not say what success means; "
                        f"{_EDITED}")]
    if target is None:
        return [Finding(where, f"run_stop says success, and the log states no {TARGET_ACCURACY} (this harness logs "
                        "one before run_start): the open division's target is the submitter's, so the success is "
                        "taken as the log states it, as the official tools take it", WARNING)]
    accuracies = [number(e.value) for e in timed if e.key == "eval_accuracy"]
    reached = [a for a in accuracies if a is not None and a >= target]
    if reached:
        return []
    best = max((a for a in accuracies if a is not None), default=None)
    best_text = "none" if best is None else f"{best:.4f}"
    return [Finding(where, f"run_stop says success, but no eval_accuracy between run_start and run_stop reached the "
                    f"target {target} (best: {best_text}); a run stops with success when an eval reaches its target, "
                    f"so {_EDITED}")]


def _lines_of_one_run(log: ResultLog) -> list[Finding] | tuple[Event, Event]:
    """(run_start, run_stop) of a log holding exactly one of each, in order; else what the log says instead."""
    where = str(log.path)
    starts, stops = log.all("run_start"), log.all("run_stop")
    if len(starts) > 1 or len(stops) > 1:
        many = f"{len(starts)} run_start" if len(starts) > 1 else f"{len(stops)} run_stop"
        statuses = ", ".join(str(e.metadata.get("status")) for e in stops)
        return [Finding(where, f"{many} lines (run_stop status {statuses or 'none'}): a run starts and stops its "
                        f"clock once; {_EDITED}")]
    if not starts:
        return [Finding(where, "no run_start line: the run ended before its clock started (it crashed or was "
                        f"stopped while initialising); {_DROPPABLE}", WARNING)]
    if not stops:
        return [Finding(where, "no run_stop line: the log is truncated (the run crashed, was killed or is still "
                        f"running): {_DROPPABLE}", WARNING)]
    start, stop = starts[0], stops[0]
    if stop.lineno < start.lineno or stop.time_ms < start.time_ms:
        return [Finding(where, f"run_stop (line {stop.lineno}, time_ms {stop.time_ms:.0f}) is not after run_start "
                        f"(line {start.lineno}, time_ms {start.time_ms:.0f}); {_EDITED}")]
    return start, stop


def judge_run(log: ResultLog) -> list[Finding]:
    """What the log says about its run: an error when no genuine run writes it (see the module), a warning when
    the run did not finish or did not converge (it does not count, and olympic scoring may drop it)."""
    where = str(log.path)
    impossible = _impossible_value(log)
    if impossible is not None:
        return [impossible]
    lines = _lines_of_one_run(log)
    if isinstance(lines, list):
        return lines
    start, stop = lines
    timed = _timed(log, start, stop)
    problem = _goes_back(timed) or _no_time_taken(timed, start, stop)
    if problem is not None:
        return [Finding(where, problem)]
    if log.status == SUCCESS:
        return _success_backed(log, timed)
    if log.status != ABORTED:
        return [Finding(where, f"run_stop status {log.status!r} is neither {SUCCESS!r} nor {ABORTED!r}")]
    reason = stop.metadata.get("reason")
    return [Finding(where, f"did not converge (run_stop status {log.status!r}{f': {reason}' if reason else ''}); "
                    f"{_DROPPABLE}", WARNING)]


def count_run(log: ResultLog, findings: list[Finding], compliance: CheckResult | None = None) -> RunCount:
    """Whether the run of `log` counts, given its findings (precheck.log_findings, which include judge_run) and
    the official compliance checker's verdict when it ran. A run with an error never counts and is never the
    dropped one; a run that failed as genuine runs fail (it stopped early, missed the target, or the compliance
    checker fails it) is dropped as the package checker drops it."""
    errors = [f.message for f in findings if f.level == ERROR]
    if errors:
        return RunCount(errors[0])
    if not log.converged:
        stop = "no run_stop" if log.status is None else f"run_stop status {log.status!r}"
        return RunCount(f"did not converge: {stop}", droppable=True)
    if compliance is not None and not compliance.passed:
        first = next(iter(compliance.problems()), "")
        return RunCount(f"fails the compliance checker{f': {first}' if first else ''}", droppable=True)
    return RunCount(None)


def dropped_runs(folder: Path, failing: dict[str, RunCount]) -> list[Finding]:
    """Olympic scoring drops one run that does not count, as the package checker does, unless its log has an
    error (then no genuine run wrote it, or the rules fail it whatever the score); a second one fails."""
    refused = [(name, count.reason) for name, count in failing.items() if not count.droppable]
    if refused:
        (name, reason), more = refused[0], len(refused) - 1
        return [Finding(str(folder), f"{name} does not count ({reason}){f', nor do {more} more' if more else ''}; "
                        "olympic scoring drops one run that failed, never a log with an error")]
    if len(failing) == 1:
        (name, count), = failing.items()
        return [Finding(str(folder), f"1 run does not count ({name}: {count.reason}); olympic scoring accepts it as "
                        "the dropped slowest run, as the package checker does", WARNING)]
    if len(failing) > 1:
        return [Finding(str(folder), f"{len(failing)} runs do not count ({', '.join(failing)}: see each log's "
                        "problems); olympic scoring drops at most one")]
    return []


def _timed_record(log: ResultLog) -> str | None:
    """Every line from run_start to run_stop, its time taken from run_start's: equal for two logs only when one
    is a copy of the other (byte for byte, or with other seeds, or every time shifted alike)."""
    starts, stops = log.all("run_start"), log.all("run_stop")
    if len(starts) != 1 or len(stops) != 1:
        return None
    start = starts[0].time_ms
    return json.dumps([(e.key, e.time_ms - start, e.value, e.metadata) for e in _timed(log, starts[0], stops[0])],
                      sort_keys=True, default=repr)


def _copies(logs: list[ResultLog]) -> dict[str, str]:
    """{the name of each log whose timed lines repeat an earlier log's to the millisecond: that log's name}."""
    first: dict[str, str] = {}
    copied = {}
    for log in logs:
        record = _timed_record(log)
        if record is not None:
            copied_from = first.setdefault(record, log.path.name)
            if copied_from != log.path.name:
                copied[log.path.name] = copied_from
    return copied


def copied_runs(folder: Path, logs: list[ResultLog]) -> list[Finding]:
    """Runs whose timed lines are identical to the millisecond. No two genuine runs are, and the official tools
    accept them; but a published, accepted submission holds one such pair (tinycorp's v4.1 tinybox_green,
    result_3.txt and result_8.txt, the seed alone differing, beside a truncated run that olympic scoring drops),
    so one copy is named in a warning and counted as the official tools count it; more are refused."""
    copied = _copies(logs)
    if not copied:
        return []
    shown = "; ".join(f"{name} of {original}" for name, original in copied.items())
    same = ("every line from run_start to run_stop holds the same value at the same time after run_start. The "
            "official tools accept this, but no two genuine runs are identical to the millisecond")
    if len(copied) == 1:
        return [Finding(str(folder), f"a copy of one run ({shown}): {same}; one copy is taken as the official tools "
                        "take it (a published, accepted submission holds one), more are refused", WARNING)]
    return [Finding(str(folder), f"copies of one run ({shown}): {same}: keep one of each and rerun the others")]


_COUNT_PREFIX = re.compile(r"^\s*(\d+)\s*x", re.IGNORECASE)  # "2xNVIDIA GB200": nodes (or accelerators) x platform


def _names(folder: str, description: dict) -> set[str]:
    names = {folder, str(description.get("system_name", ""))}
    return {n.strip().lower() for n in names | {_COUNT_PREFIX.sub("", n, count=1) for n in names} if n.strip()}


def _whole(value: object) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


def _platform_problem(platform: str, folder: str, descriptions: dict[str, dict]) -> str | None:
    description = descriptions[folder]
    prefix = _COUNT_PREFIX.match(platform)
    nodes, per_node = _whole(description.get("number_of_nodes")), _whole(description.get("accelerators_per_node"))
    if prefix and nodes is not None and per_node is not None and int(prefix[1]) not in (nodes, nodes * per_node):
        return (f"its count ({prefix[1]}) is neither the {nodes} node(s) nor the {nodes * per_node} accelerators of "
                f"systems/{folder}.json")
    said = {platform.strip().lower(), _COUNT_PREFIX.sub("", platform, count=1).strip().lower()}
    if said & _names(folder, description):
        return None
    others = [name for name, d in descriptions.items() if name != folder and said & _names(name, d)]
    return f"it names the package's other system {others[0]}" if others else None


def platform_findings(org: Path, descriptions: dict[str, dict], logs: dict[str, list[ResultLog]]) -> list[Finding]:
    """The logs of results/<name>/ are runs of systems/<name>.json: the platform a log states ("2xNVIDIA GB200",
    free text, often a placeholder) must not contradict that system's node count nor name another system of the
    package. The official tools compare neither, so results folders swapped between two systems pass them."""
    found = []
    for folder, runs in logs.items():
        if folder not in descriptions:
            continue
        platforms = {str(v) for log in runs for v in log.values("submission_platform")}
        for platform in sorted(platforms):
            problem = _platform_problem(platform, folder, descriptions)
            if problem:
                found.append(Finding(str(org / "results" / folder), f"the logs state submission_platform "
                                     f"{platform!r}, but {problem}: are the results folders of two systems swapped? "
                                     "The official tools do not compare them; results/<name>/ must hold the runs "
                                     "of systems/<name>.json"))
    return found
