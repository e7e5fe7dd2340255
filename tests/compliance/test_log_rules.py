"""The rules of one result log (compliance.log_rules), rule by rule: each pattern of the published (genuine) BERT logs
beside the forged counterpart that must fail; and `check` on a broken log, each message naming the file and the fix.
No official tool runs in the rule-by-rule tests (tests/faults/test_forged_logs.py runs them)."""

from __future__ import annotations

import json
import math
import re

import pytest

from compliance.findings import ERROR, WARNING
from compliance.log_rules import judge_run
from compliance.result_log import read_result_log
from tests.compliance.fakes import (
    CLOSED_RUN,
    as_two_nodes,
    clock_moved_in,
    edit_events,
    edit_lines,
    evals_printed_late,
    evaluated_offline,
    micro_system,
    moved_to_start,
    started_twice,
    stopped_early,
    time_of,
    with_value,
    write_package,
    write_run,
    write_runs,
    zero_minutes,
)
from tests.helpers.compliance import check_fails, cli, ends_in_one_line


def _errors(path) -> list[str]:
    return [f.message for f in judge_run(read_result_log(path)) if f.level == ERROR]


def test_per_rank_lines_out_of_order_and_skewed_clocks_are_genuine(tmp_path):
    log = as_two_nodes(write_run(tmp_path / "result_0.txt", seed=1), ranks=16, skew_ms=2800)
    read = read_result_log(log)
    assert len(read.all("init_start")) == 16
    # Goes back by the skew less a fake line's time (1 to 2 s, fakes.STEP_MS): over half a second.
    assert any(b.time_ms < a.time_ms - 500 for a, b in zip(read.events, read.events[1:]))
    assert _errors(log) == []
    early = stopped_early(write_run(tmp_path / "result_1.txt", seed=2), seconds=10)
    (said,) = _errors(early)
    assert re.fullmatch(r"run_stop \(line \d+\) is timed 10\.000 s before the eval that reached the target \(line "
                        r"\d+: eval_accuracy 0\.07000003 at epoch_num 3072\): a run stops its clock when that eval "
                        r"ends, so the score understates the time to train by 0\.1667 minutes\. The official tools "
                        r"accept it; no honest log does", said)


def test_a_clock_started_late_or_stopped_early_is_refused_in_minutes(tmp_path):
    """run_start moved 4.9 s later, or run_stop 4.9 s before the eval that reached the target: the first block now
    starts before the clock, or that eval ends after it. Nodes' clock differences are no excuse: they would shorten
    the run."""
    started_late = with_value(write_run(tmp_path / "result_0.txt", seed=1), "run_start", "time_ms",
                              time_of(tmp_path / "result_0.txt", "block_start") + 4900)
    (said,) = _errors(started_late)
    assert re.fullmatch(r"line \d+ \(block_start\) is timed 4\.900 s before run_start \(line \d+\): a run's work "
                        r"begins after its clock starts, so the scored time leaves out at least 4\.900 s\. Nodes' "
                        r"clocks may differ, but never so as to shorten the run; no genuine run writes this: .*", said)
    both = clock_moved_in(write_run(tmp_path / "result_1.txt", seed=2))
    assert "(block_start) is timed " in _errors(both)[0]
    stopped_early_only = write_run(tmp_path / "result_2.txt", seed=3)
    assert _errors(stopped_early_only) == []
    # Timed from the eval that reached the target: how many lines lie between it and run_stop, and a fake run's
    # time per line, are not this test's business (moving run_stop a fixed 4.9 s put it before that eval or not,
    # depending on how many fake runs the worker had written before).
    (said,) = _errors(stopped_early(stopped_early_only, seconds=4.9))
    assert "understates the time to train by 0.0817 minutes" in said


def test_evals_printed_late_are_accepted_and_named(tmp_path):
    """Another submitter's style: every eval_accuracy line printed in a batch after the last block_stop, each with
    the time its eval ended. Only times are judged; a warning names the style, to the millisecond (5.001 s is not
    the 5 s it exceeds)."""
    late = evals_printed_late(write_run(tmp_path / "result_0.txt", seed=1))
    found = judge_run(read_result_log(late))
    assert [f.level for f in found] == [WARNING]
    assert re.fullmatch(r"eval_accuracy lines are printed late: line \d+ is timed [0-9.]+ s before line \d+ "
                        r"\(block_stop\) above it\. Only the times are judged \(each eval inside the run\), as the "
                        r"official tools judge them", found[0].message)
    barely = write_run(tmp_path / "result_1.txt", seed=2)
    eval_time = time_of(barely, "eval_accuracy")
    edit_events(barely, lambda _, e: dict(e, time_ms=eval_time + 5001) if e["key"] == "eval_stop" and
                e["time_ms"] < eval_time + 5001 else e)
    text = (barely).read_text().splitlines()
    first_eval = next(i for i, line in enumerate(text) if '"key": "eval_accuracy"' in line)
    stop = next(i for i, line in enumerate(text) if '"key": "eval_stop"' in line)
    text[first_eval], text[stop] = text[stop], text[first_eval]  # the eval printed after its eval_stop, 5.001 s later
    barely.write_text("\n".join(text) + "\n")
    (warned,) = judge_run(read_result_log(barely))
    assert "is timed 5.001 s before line" in warned.message and "5.0 s" not in warned.message


def test_training_after_run_stop_is_genuine_only_where_evals_ran_offline(tmp_path):
    """Intel-Habana's logs train to their last step, then print each eval with the time its checkpoint was trained;
    run_stop is the time of the first that reached the target. Where evals are printed as they happen, training
    after run_stop means the clock was stopped while the run went on."""
    offline = evaluated_offline(write_run(tmp_path / "result_0.txt", seed=1, accuracies=(0.04, 0.07, 0.08)), 1)
    found = judge_run(read_result_log(offline))
    assert [f.level for f in found] == [WARNING, WARNING]
    assert re.match(r"training is timed up to [0-9.]+ s after run_stop \(line \d+, block_stop\), and every eval is "
                    r"printed after the training: the run was evaluated offline", found[0].message)
    assert found[1].message.startswith("eval_accuracy lines are printed late")
    inline = write_run(tmp_path / "result_1.txt", seed=2, accuracies=(0.04, 0.07, 0.08))
    hit = [json.loads(line[len(":::MLLOG "):]) for line in inline.read_text().splitlines()
           if '"key": "eval_stop"' in line][1]["time_ms"]
    edit_events(inline, lambda _, e: dict(e, time_ms=hit) if e["key"] == "run_stop" else e)
    (said,) = _errors(inline)
    assert "after run_stop (line" in said


def test_an_impossible_time_before_run_start_that_no_rule_reads_is_a_warning(tmp_path):
    """Intel's v2.1 CPU logs hold a cache_clear at a time ten times too large; the same on init_start (which the
    30-minute rule reads) or on the run's work is refused."""
    log = write_run(tmp_path / "result_0.txt", seed=1)
    with_value(log, "cache_clear", "time_ms", time_of(log, "cache_clear") * 10)
    (warned,) = judge_run(read_result_log(log))
    assert warned.level == WARNING and warned.message.startswith("line 1 (cache_clear) has time_ms ")
    assert "no rule reads its time, so the score stands" in warned.message
    for key in ("init_start", "block_start"):
        forged = write_run(tmp_path / f"{key}.txt", seed=2)
        with_value(forged, key, "time_ms", time_of(forged, key) * 10)
        (said,) = _errors(forged)
        assert f"({key}) has time_ms " in said and "which no clock reads" in said


def test_the_initial_checkpoints_eval_before_run_start_is_genuine(tmp_path):
    """PCL's v1.0 logs print the initial checkpoint's eval as an eval_accuracy of epoch_num 0 while initialising."""
    log = write_run(tmp_path / "result_0.txt", seed=1)
    edit_events(log, lambda _, e: [dict(e, key="eval_accuracy", value=0.34, metadata={"epoch_num": 0}), e]
                if e["key"] == "init_stop" else e)
    assert _errors(log) == []
    edit_events(log, lambda _, e: dict(e, metadata={"epoch_num": 1024}) if e["key"] == "eval_accuracy" and
                e["value"] == 0.34 else e)
    assert "(eval_accuracy) is timed " in _errors(log)[0]


def test_a_lone_closed_log_faster_than_any_machine_is_refused(tmp_path):
    """A log names no hardware: its machine is taken as one accelerator per sequence of its global batch, each
    faster than any made. A run of 1 ms is below that; the genuine one (a minute here) far above."""
    closed = micro_system("closed", 448)
    genuine = write_run(tmp_path / "result_0.txt", seed=1, system=closed, **CLOSED_RUN)
    assert _errors(genuine) == []
    (said,) = _errors(moved_to_start(write_run(tmp_path / "result_1.txt", seed=2, system=closed, **CLOSED_RUN)))
    assert said.startswith("run_start to run_stop is 0.00002 minutes (0.001 s), but training 2,400,000 samples of "
                           "BERT-large (240 GFLOP each at least) takes at least 0.00043 minutes (0.026 s) on 448 "
                           "accelerators (the log names no hardware: one per sequence of its global batch of 448) "
                           "counted at 50 PFLOP/s each")
    assert _errors(moved_to_start(write_run(tmp_path / "result_2.txt", seed=3))) == []  # open: its model unknown


def test_a_run_that_takes_no_time_is_refused(tmp_path):
    assert _errors(write_run(tmp_path / "result_0.txt", seed=1)) == []
    forged = zero_minutes(write_run(tmp_path / "result_1.txt", seed=2))
    assert _errors(forged) == ["run_stop is logged at run_start's time: the run trained and evaluated in no time. "
                               "The official tools score it 0 minutes; no genuine run writes this: the log was "
                               "edited or holds more than one run; keep one run per result file and rerun this one"]


@pytest.mark.parametrize("key, field, value, said", [
    ("eval_accuracy", "value", math.inf, "eval_accuracy inf is no accuracy"),
    ("eval_accuracy", "value", 1.5, "eval_accuracy 1.5 is no accuracy"),
    ("run_stop", "time_ms", math.nan, "(run_stop) has time_ms nan, which no clock reads"),
    ("run_stop", "time_ms", math.inf, "(run_stop) has time_ms inf, which no clock reads"),
    ("run_stop", "time_ms", 1e308, "(run_stop) has time_ms 1e+308, which no clock reads"),
])
def test_impossible_values_are_refused(tmp_path, key, field, value, said):
    errors = _errors(with_value(write_run(tmp_path / "result_0.txt", seed=1), key, field, value))
    assert len(errors) == 1 and said in errors[0]


def test_a_second_run_start_is_refused(tmp_path):
    errors = _errors(started_twice(write_run(tmp_path / "result_0.txt", seed=1)))
    assert errors and errors[0].startswith("2 run_start lines (run_stop status success): a run starts and stops")


def test_malformed_mllog_line(tmp_path):
    logs = write_runs(tmp_path / "logs")
    edit_lines(logs / "result_3.txt", lambda line: line[:60] if '"key": "eval_accuracy"' in line else line)
    first = next(i for i, line in enumerate((logs / "result_3.txt").read_text().splitlines(), 1) if len(line) == 60)
    output = check_fails(logs)
    assert f"result_3.txt: 3 malformed :::MLLOG line(s) (line {first}: not valid JSON: Unterminated string" in output
    assert "The log is damaged: rerun this run" in output
    assert "NOT CHECKED" in output


def test_truncated_log_without_run_stop(tmp_path):
    log = write_run(tmp_path / "result_0.txt", seed=1)
    edit_lines(log, lambda line: None if '"key": "train_samples"' in line or '"key": "eval_samples"' in line
               or '"key": "run_stop"' in line else line)
    output = check_fails(log)
    assert "result_0.txt: no run_stop line: the log is truncated (the run crashed, was killed or is still " \
           "running): the run does not count; olympic scoring may drop it as the slowest run" in output
    assert "Required EXACTLY_ONE occurrence of 'run_stop' but found 0" in output  # the official checker agrees


def test_division_spelled_wrong(tmp_path):
    org = write_package(tmp_path / "Org")
    desc = json.loads((org / "systems" / "cpu_micro.json").read_text())
    desc["division"] = "Closed"
    (org / "systems" / "cpu_micro.json").write_text(json.dumps(desc))
    output = check_fails(org)
    assert "systems/cpu_micro.json: division: must be \"closed\" or \"open\" (lower case), got 'Closed'" in output
    assert "NOT RUN package checker" in output
    log = write_run(tmp_path / "result_0.txt", seed=1)  # no descriptor can say "Open": the log is edited
    edit_lines(log, lambda line: line.replace('"value": "open"', '"value": "Open"')
               if '"key": "submission_division"' in line else line)
    output = check_fails(log)
    assert "submission_division is 'Open'; it must be 'closed' or 'open' (lower case), and the compliance " \
           "checker crashes on anything else. Fix system.division in the descriptor and rerun" in output


def test_closed_division_runs_that_pass(tmp_path):
    logs = write_runs(tmp_path / "logs", system=micro_system("closed", 448), **CLOSED_RUN)
    result = cli("check", logs, "--division", "closed")
    assert result.exit_code == 0, result.output
    assert "PASS    RCP checker" in result.output
    mismatch = cli("check", logs, "--division", "open")
    assert mismatch.exit_code == 1 and "logged division 'closed', but the submission is checked as 'open'" \
        in mismatch.output


@pytest.mark.parametrize("field, digits", [("time_ms", 400), ("eval_accuracy", 400), ("epoch_num", 400)])
def test_numbers_of_hundreds_of_digits_end_in_one_line(tmp_path, field, digits):
    """A 400-digit time_ms, eval_accuracy or epoch_num raised OverflowError in the judgement and the report."""
    org = write_package(tmp_path / "Org")
    log = org / "results" / "cpu_micro" / "bert" / "result_3.txt"
    pattern = {"time_ms": r'"time_ms": \d+', "eval_accuracy": r'"value": [0-9.e-]+', "epoch_num": r'"epoch_num": \d+'}
    huge = {"time_ms": '"time_ms": ', "eval_accuracy": '"value": ', "epoch_num": '"epoch_num": '}[field] + "9" * digits
    edit_lines(log, lambda line: re.sub(pattern[field], huge, line) if '"key": "eval_accuracy"' in line else line)
    said = {"time_ms": "(eval_accuracy) has time_ms inf, which no clock reads", "eval_accuracy": "eval_accuracy inf "
            "is no accuracy", "epoch_num": "eval_accuracy at epoch_num inf, which is no count of samples"}[field]
    ends_in_one_line(cli("check", log), said)
    ends_in_one_line(cli("score", org), said)
    report = cli("report", org, "-o", tmp_path / "report")
    assert report.exit_code == 1 and "verdict FAIL" in report.output, report.output
