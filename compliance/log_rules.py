"""The rules that read one result log: whether it is the honest record of a genuine run. Each is judged on the
times its lines carry (not on their order in the file), calibrated on the published BERT results of MLPerf
Training v4.1 and v5.0 (630 logs of 63 systems, all accepted by the official tools; benchmarks/published_results.py
runs `check` and `score` on them) and read against those of v0.7 to v4.0. What the runs of a folder say together
is judged in compliance.folder_rules (which runs count, copies), what a whole package says in
compliance.package_rules (and, for a package of this harness, compliance.provenance).

First, in plain words, what the official tools check badly or crash on (log_findings): a malformed :::MLLOG line,
a division they do not know or another than the submission's, another benchmark, a global_batch_size that is not
one integer, a seed that is not an integer, an eval_accuracy without its epoch_num. A finding that `blocks` keeps
the log from the tools (compliance.findings).

The run is what happens from run_start to run_stop: its work is the training (block_start, block_stop,
epoch_start, epoch_stop) and the evals (eval_start, eval_accuracy, eval_stop). Each rule, with the genuine
patterns it accepts and the forgeries it refuses:

1. Values. Every time_ms is a clock's reading (milliseconds since 1970, before 2100), every eval_accuracy a
   fraction and its epoch_num a count. Accepted: an impossible time on a line before run_start that no rule reads
   (Intel's v2.1 CPU logs hold a cache_clear at a time ten times too large): a warning, the score stands. Refused:
   an impossible time on any line a rule reads (init_start, init_stop, run_start, run_stop, the run's work), an
   accuracy of Infinity, a 400-digit epoch_num (the official tools are not run on them: they crash on some).
2. One run. Exactly one run_start and one run_stop, run_stop not earlier than run_start. Refused: a second
   run_start or run_stop (two runs in one file), run_stop timed before run_start.
3. The work lies inside the clock. No work of the run is timed before run_start, by any margin: the clock starts
   before the run touches its data, and in none of the 3,381 published logs of v0.7 to v5.0 does a block or an eval
   precede it (some start in its millisecond). Accepted: an eval_accuracy of epoch_num 0 before run_start (the
   initial checkpoint's eval during initialisation, as PCL's v1.0 logs print it). Refused: run_start moved later,
   which shortens the scored time (said in minutes); nodes' clock differences are no excuse here, since they would
   shorten the run.
4. The evals end before the clock stops. A run stops its clock when the eval that reached its target ends, so
   no eval is timed after run_stop. Refused: run_stop timed before the eval that reached the target (xFusion's
   v3.1 logs, accepted then, stop their clock up to 71 minutes before it): the score understates the time to
   train, and the message says by how many minutes; run_stop moved earlier (a forged shorter run) is refused the
   same way.
5. Training after the clock stops. Accepted, with a warning: training timed after run_stop in a log whose evals
   are all printed after its training (a run evaluated offline: Intel-Habana's logs of v1.0 to v3.1 train to
   their last step, then print each eval with the time its checkpoint was trained; run_stop is the time of the
   first that reached the target). Refused: training timed after run_stop where evals are printed as they
   happen (the clock was stopped while the run went on).
6. Line order. Lines may be printed in any order: every rank logs init_start and cache_clear, a few ms out of
   order; nodes' clocks differ by seconds (up to 2.8 s in Dell's 2-node runs); evals may be printed in a batch
   after the last block_stop, each with the time it ended. Accepted (a warning names eval lines printed more than
   LATE_PRINT_MS late); only the times above are judged.
7. Time taken. Refused: run_stop at run_start's time, or an eval at run_start's time (work done in no time); and
   a run faster than its hardware (compliance.hardware): in the closed division, whose model is BERT-large, a
   lone log's run against the largest machine its global batch can use, a package's against its system JSON.
8. Success. A `success` is backed by an eval timed inside the run that reached the log's own target
   (target_accuracy, which this harness logs; 0.720 at least in the closed division). Refused: a success no eval
   backs.

A log edited consistently (every time shifted alike, a value changed everywhere, a whole run written by hand)
is undetectable here, as it is for the official tools: an unsigned log proves nothing about who wrote it.
"""

from __future__ import annotations

import math

from bert.mllog import ABORTED, SUCCESS, TARGET_ACCURACY
from bert.mlperf_rules import BENCHMARK, DIVISIONS, MLPERF_TARGET_ACCURACY
from compliance.findings import ERROR, WARNING, Finding
from compliance.hardware import least_sample_flops, lone_machine, too_fast
from compliance.result_log import Event, ResultLog, number

LATEST_TIME_MS = 4_102_444_800_000  # 2100-01-01: a time_ms after it is no clock's reading
LATE_PRINT_MS = 5_000  # an eval line timed this much before a line above it was printed late, not out of order
TRAINING_KEYS = ("block_start", "block_stop", "epoch_start", "epoch_stop")
EVAL_KEYS = ("eval_start", "eval_accuracy", "eval_stop")
RULE_KEYS = {"init_start", "init_stop", "run_start", "run_stop", *TRAINING_KEYS, *EVAL_KEYS}  # times a rule reads
_EDITED = "no genuine run writes this: the log was edited or holds more than one run; keep one run per result " \
          "file and rerun this one"
_DROPPABLE = ("the run does not count; olympic scoring may drop it as the slowest run (the package checker does), "
              "a second run that does not count fails the submission")


def span(ms: float) -> str:
    """A duration as the messages give it: minutes and seconds to the millisecond, so that 5.001 s is never shown
    as the 5 s it exceeds."""
    return f"{ms / 60_000:,.4f} minutes ({ms / 1000:,.3f} s)" if abs(ms) >= 60_000 else f"{ms / 1000:,.3f} s"


def _is_clock_reading(time_ms: float) -> bool:
    return math.isfinite(time_ms) and 0 <= time_ms < LATEST_TIME_MS


def _impossible_values(log: ResultLog) -> list[Finding]:
    """Rule 1: times no clock reads and accuracies that are no fraction (the official tools take both as they are)."""
    where, found = str(log.path), []
    start = log.first("run_start")
    for e in log.events:
        if not _is_clock_reading(e.time_ms):
            harmless = e.key not in RULE_KEYS and start is not None and e.lineno < start.lineno
            if not harmless:  # the official tools crash on a time past a float's range: they are not run on it
                return [Finding(where, f"line {e.lineno} ({e.key}) has time_ms {e.time_ms!r}, which no clock reads "
                                f"(milliseconds since 1970, before 2100); {_EDITED}", blocks=True)]
            if not found:
                found.append(Finding(where, f"line {e.lineno} ({e.key}) has time_ms {e.time_ms!r}, which no clock "
                                     "reads; it comes before run_start and no rule reads its time, so the score "
                                     "stands (a published, accepted log holds such a line)", WARNING))
        accuracy = number(e.value) if e.key == "eval_accuracy" else None
        if accuracy is not None and not (math.isfinite(accuracy) and 0 <= accuracy <= 1):
            return [Finding(where, f"line {e.lineno}: eval_accuracy {accuracy!r} is no accuracy (a fraction "
                            f"of the masked tokens, between 0 and 1); {_EDITED}", blocks=True)]
        samples = number(e.metadata.get("epoch_num")) if e.key == "eval_accuracy" else None
        if samples is not None and not (math.isfinite(samples) and samples >= 0):
            return [Finding(where, f"line {e.lineno}: eval_accuracy at epoch_num {samples!r}, which is no count of "
                            f"samples trained; {_EDITED}", blocks=True)]
    return found


def _run_bounds(log: ResultLog) -> list[Finding] | tuple[Event, Event]:
    """Rule 2: (run_start, run_stop) of a log holding exactly one of each; else what the log says instead."""
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
    if stop.time_ms < start.time_ms:
        return [Finding(where, f"run_stop (line {stop.lineno}, time_ms {stop.time_ms:.0f}) is timed before "
                        f"run_start (line {start.lineno}, time_ms {start.time_ms:.0f}); {_EDITED}")]
    return start, stop


def _work(log: ResultLog, keys: tuple[str, ...]) -> list[Event]:
    return [e for e in log.events if e.key in keys]


def _initial_eval(event: Event) -> bool:
    """The initial checkpoint's eval, which some implementations log as an eval_accuracy of epoch_num 0."""
    return event.key == "eval_accuracy" and number(event.metadata.get("epoch_num")) == 0


def _before_start(log: ResultLog, start: Event) -> str | None:
    """Rule 3."""
    early = [e for e in _work(log, TRAINING_KEYS + EVAL_KEYS) if e.time_ms < start.time_ms and not _initial_eval(e)]
    if not early:
        return None
    first = min(early, key=lambda e: e.time_ms)
    return (f"line {first.lineno} ({first.key}) is timed {span(start.time_ms - first.time_ms)} before run_start (line "
            f"{start.lineno}): a run's work begins after its clock starts, so the scored time leaves out at least "
            f"{span(start.time_ms - first.time_ms)}. Nodes' clocks may differ, but never so as to shorten the run; "
            f"{_EDITED}")


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


def _evals_after_stop(log: ResultLog, stop: Event) -> str | None:
    """Rule 4."""
    late = [e for e in _work(log, EVAL_KEYS) if e.time_ms > stop.time_ms]
    if not late:
        return None
    target, _ = _target(log)
    reached = [e for e in log.all("eval_accuracy") if target is not None and (number(e.value) or 0) >= target]
    first = min(reached, key=lambda e: e.time_ms) if reached else None
    if first is not None and first.time_ms > stop.time_ms:
        return (f"run_stop (line {stop.lineno}) is timed {span(first.time_ms - stop.time_ms)} before the eval that "
                f"reached the target (line {first.lineno}: eval_accuracy {first.value} at epoch_num "
                f"{first.metadata.get('epoch_num')}): a run stops its clock when that eval ends, so the score "
                f"understates the time to train by {(first.time_ms - stop.time_ms) / 60_000:,.4f} minutes. The "
                "official tools accept it; no honest log does")
    last = max(late, key=lambda e: e.time_ms)
    return (f"line {last.lineno} ({last.key}) is timed {span(last.time_ms - stop.time_ms)} after run_stop (line "
            f"{stop.lineno}): a run's evals end before its clock stops, so the scored time leaves out at least "
            f"that much; {_EDITED}")


def _training_after_stop(log: ResultLog, stop: Event) -> Finding | None:
    """Rule 5."""
    training = _work(log, TRAINING_KEYS)
    late = [e for e in training if e.time_ms > stop.time_ms]
    if not late:
        return None
    last = max(late, key=lambda e: e.time_ms)
    evals = log.all("eval_accuracy")
    offline = bool(evals) and min(e.lineno for e in evals) > max(e.lineno for e in training)
    after = (f"training is timed up to {span(last.time_ms - stop.time_ms)} after run_stop (line {last.lineno}, "
             f"{last.key})")
    if offline:
        return Finding(str(log.path), f"{after}, and every eval is printed after the training: the run was "
                       "evaluated offline and trained on past the checkpoint that reached the target, as "
                       "Intel-Habana's published runs did. The run is scored to that eval's time, as the official "
                       "tools score it", WARNING)
    return Finding(str(log.path), f"{after}, while its evals are printed as they happen: the clock was stopped while "
                   f"the run went on; {_EDITED}")


def _printed_late(log: ResultLog) -> Finding | None:
    """Rule 6: eval lines printed long after they were timed (accepted; named in a warning)."""
    latest: Event | None = None
    for e in _work(log, TRAINING_KEYS + EVAL_KEYS):
        if e.key == "eval_accuracy" and latest is not None and latest.time_ms - e.time_ms > LATE_PRINT_MS:
            return Finding(str(log.path), f"eval_accuracy lines are printed late: line {e.lineno} is timed "
                           f"{span(latest.time_ms - e.time_ms)} before line {latest.lineno} ({latest.key}) above it. "
                           "Only the times are judged (each eval inside the run), as the official tools judge them",
                           WARNING)
        if latest is None or e.time_ms > latest.time_ms:
            latest = e
    return None


def _no_time_taken(log: ResultLog, start: Event, stop: Event) -> str | None:
    """Rule 7, the first part."""
    if stop.time_ms == start.time_ms:
        return ("run_stop is logged at run_start's time: the run trained and evaluated in no time. The official tools "
                f"score it 0 minutes; {_EDITED}")
    early = next((e for e in log.all("eval_accuracy") if e.time_ms == start.time_ms and not _initial_eval(e)), None)
    if early is not None:
        return (f"eval_accuracy on line {early.lineno} is logged at run_start's time: samples trained in no time; "
                f"{_EDITED}")
    return None


def faster_than_any_machine(log: ResultLog) -> str | None:
    """Rule 7, the second part, for a log alone (a package's system JSON bounds it more tightly:
    compliance.package_rules)."""
    machine = lone_machine(log)
    if log.division != "closed" or machine is None:
        return None
    return too_fast(log, machine, least_sample_flops(), "BERT-large")


def _success_backed(log: ResultLog, start: Event, stop: Event) -> list[Finding]:
    """Rule 8."""
    where = str(log.path)
    target, problem = _target(log)
    if problem:
        return [Finding(where, f"run_stop says success, but {problem}: the log does not say what success means; "
                        f"{_EDITED}")]
    if target is None:
        return [Finding(where, f"run_stop says success, and the log states no {TARGET_ACCURACY} (this harness logs "
                        "one before run_start): the open division's target is the submitter's, so the success is "
                        "taken as the log states it, as the official tools take it", WARNING)]
    accuracies = [number(e.value) for e in log.all("eval_accuracy") if start.time_ms < e.time_ms <= stop.time_ms]
    reached = [a for a in accuracies if a is not None and a >= target]
    if reached:
        return []
    best = max((a for a in accuracies if a is not None), default=None)
    best_text = "none" if best is None else f"{best:.4f}"
    return [Finding(where, f"run_stop says success, but no eval_accuracy timed between run_start and run_stop "
                    f"reached the target {target} (best: {best_text}); a run stops with success when an eval reaches "
                    f"its target, so {_EDITED}")]


def _timing(log: ResultLog, start: Event, stop: Event) -> list[Finding]:
    """Rules 3 to 7: an error, or the warnings of the genuine patterns."""
    problem = (_before_start(log, start) or _evals_after_stop(log, stop) or _no_time_taken(log, start, stop)
               or faster_than_any_machine(log))
    if problem is not None:
        return [Finding(str(log.path), problem)]
    return [f for f in (_training_after_stop(log, stop), _printed_late(log)) if f is not None]


def judge_run(log: ResultLog) -> list[Finding]:
    """What the log says about its run: an error when no genuine run writes it (see the module), a warning for a
    genuine pattern worth naming, or when the run did not finish or did not converge (it does not count, and
    olympic scoring may drop it)."""
    where = str(log.path)
    found = _impossible_values(log)
    if any(f.level == ERROR for f in found):
        return found
    bounds = _run_bounds(log)
    if isinstance(bounds, list):
        return found + bounds
    start, stop = bounds
    found += _timing(log, start, stop)
    if any(f.level == ERROR for f in found):
        return [f for f in found if f.level == ERROR]
    if log.status == SUCCESS:
        return found + _success_backed(log, start, stop)
    if log.status != ABORTED:
        return [Finding(where, f"run_stop status {log.status!r} is neither {SUCCESS!r} nor {ABORTED!r}")]
    reason = stop.metadata.get("reason")
    why = f": {reason}" if reason else ""
    return found + [Finding(where, f"did not converge (run_stop status {log.status!r}{why}); {_DROPPABLE}", WARNING)]


def _malformed(log: ResultLog) -> list[Finding]:
    if not log.malformed:
        return []
    shown = "; ".join(f"line {m.lineno}: {m.problem}" for m in log.malformed[:3])
    more = f" and {len(log.malformed) - 3} more" if len(log.malformed) > 3 else ""
    return [Finding(str(log.path), f"{len(log.malformed)} malformed :::MLLOG line(s) ({shown}{more}); the official "
                    "checkers reject or crash on the whole file. The log is damaged: rerun this run", blocks=True)]


def _division(log: ResultLog, expected: str | None) -> list[Finding]:
    where, logged = str(log.path), log.division
    if logged is None:
        return [Finding(where, "no submission_division line; the compliance checker cannot pick its rules")]
    if logged not in DIVISIONS:
        return [Finding(where, f"submission_division is {logged!r}; it must be 'closed' or 'open' (lower case), "
                        "and the compliance checker crashes on anything else. Fix system.division in the "
                        "descriptor and rerun", blocks=True)]
    if expected is not None and logged != expected:
        return [Finding(where, f"logged division {logged!r}, but the submission is checked as {expected!r}; "
                        "the runs must come from a descriptor of the same division")]
    return []


def _run_fields(log: ResultLog, division: str | None) -> list[Finding]:
    where, found = str(log.path), []
    if log.value("submission_benchmark") != BENCHMARK:
        found.append(Finding(where, f"submission_benchmark is {log.value('submission_benchmark')!r}, not "
                             f"'{BENCHMARK}'", blocks=True))
    sizes = set(map(repr, log.values("global_batch_size")))
    if not sizes:
        found.append(Finding(where, "no global_batch_size line; the RCP checker cannot match the run to a "
                             "reference convergence point"))
    elif len(sizes) > 1 or not isinstance(log.global_batch_size, int):
        found.append(Finding(where, f"global_batch_size logged as {', '.join(sorted(sizes))}; it must be logged "
                             "once, as an integer"))
    seeds = log.values("seed")
    if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        problem = "no seed line" if not seeds else f"seed logged as {seeds!r}, not an integer"
        found.append(Finding(where, f"{problem}; the seed checker requires an integer seed per run",
                             ERROR if division == "closed" else WARNING))
    if any("epoch_num" not in e.metadata for e in log.all("eval_accuracy")):
        found.append(Finding(where, "an eval_accuracy line has no epoch_num (samples seen); the RCP checker "
                             "crashes on it", blocks=True))
    return found


def log_findings(log: ResultLog, division: str | None = None) -> list[Finding]:
    """Problems of one log; `division` is the division it must have (None: whatever it logged)."""
    if log.unreadable is not None:
        return [Finding(str(log.path), log.unreadable, blocks=True)]
    if not log.events and not log.malformed:
        return [Finding(str(log.path), "no :::MLLOG lines: not an MLPerf result log (the trainer writes one with "
                        "--log-file)", blocks=True)]
    found = _malformed(log) + _division(log, division)
    return found + _run_fields(log, division or log.division) + judge_run(log)
