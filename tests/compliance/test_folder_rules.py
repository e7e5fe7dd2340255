"""The rules of the runs of one folder together (compliance.folder_rules): which runs count under olympic scoring,
copies within a folder, and `check` on a folder whose runs do not make one submission."""

from __future__ import annotations

import json
import shutil

from compliance.checkers import CheckResult
from compliance.findings import ERROR, WARNING
from compliance.folder_rules import copied_runs, count_run, dropped_runs
from compliance.log_rules import log_findings
from compliance.result_log import read_result_log, result_logs_in
from tests.compliance.fakes import (
    CLOSED_RUN,
    micro_system,
    started_twice,
    truncated,
    with_slow_init,
    with_value,
    write_run,
    write_runs,
)
from tests.helpers.compliance import check_fails, cli


def _failing(problem: str) -> CheckResult:
    """The compliance checker's verdict on a log it fails for `problem` (its own words)."""
    return CheckResult("compliance checker", "x", False, f"WARNING -  {problem}\nERROR - FAILED")


def test_a_run_that_failed_as_genuine_runs_fail_is_the_dropped_one_and_a_forged_one_never(tmp_path):
    logs = write_runs(tmp_path / "logs")
    with_slow_init(logs / "result_2.txt")
    slow = read_result_log(logs / "result_2.txt")
    assert log_findings(slow) == []  # the log is sound; the compliance checker fails its 31-minute init
    counted = count_run(slow, [], _failing("CHECK for 'init_stop' failed in line 7:"))
    assert counted.droppable and counted.reason.startswith("fails the compliance checker: CHECK for 'init_stop'")
    assert [f.level for f in dropped_runs(logs, {"result_2.txt": counted})] == [WARNING]
    cut = read_result_log(truncated(logs / "result_5.txt"))
    found = log_findings(cut)
    assert [f.level for f in found] == [WARNING] and "no run_stop line: the log is truncated" in found[0].message
    counted_cut = count_run(cut, found, _failing("Required EXACTLY_ONE occurrence of 'run_stop' but found 0"))
    assert counted_cut.droppable
    both = dropped_runs(logs, {"result_2.txt": counted, "result_5.txt": counted_cut})
    assert [f.level for f in both] == [ERROR] and "olympic scoring drops at most one" in both[0].message
    forged = read_result_log(started_twice(logs / "result_7.txt"))
    refused = dropped_runs(logs, {"result_7.txt": count_run(forged, log_findings(forged))})
    assert [f.level for f in refused] == [ERROR]
    assert "olympic scoring drops one run that failed, never a log with an error" in refused[0].message


def _copied(logs):
    return copied_runs(logs, [read_result_log(p) for p in result_logs_in(logs)])


def test_one_copy_of_a_run_is_taken_as_published_and_more_are_refused(tmp_path):
    """tinycorp's accepted v4.1 tinybox_green holds result_8.txt, a copy of result_3.txt but for the seed."""
    logs = write_runs(tmp_path / "logs")
    assert _copied(logs) == []
    shutil.copyfile(logs / "result_3.txt", logs / "result_8.txt")
    with_value(logs / "result_8.txt", "seed", "value", 22978)
    (one,) = _copied(logs)
    assert one.level == WARNING
    assert one.message.startswith("a copy of one run (result_8.txt of result_3.txt: 3 of its 3 evals measure the "
                                  "same accuracy at the same epoch_num, within 100 ms of the same time since "
                                  "run_start); the official tools accept this, but runs of different seeds never "
                                  "repeat each other's measurements. One copy is taken")
    shutil.copyfile(logs / "result_3.txt", logs / "result_6.txt")  # a second copy, every time shifted a day
    text = (logs / "result_6.txt").read_text()
    (logs / "result_6.txt").write_text("\n".join(
        ":::MLLOG " + json.dumps(dict(e, time_ms=e["time_ms"] + 86_400_000))
        for e in (json.loads(line[len(":::MLLOG "):]) for line in text.splitlines())) + "\n")
    (both,) = _copied(logs)
    assert both.level == ERROR and both.message.startswith("copies of one run (result_6.txt of result_3.txt: 3 of "
                                                           "its 3 evals")
    assert "; result_8.txt of result_3.txt: 3 of its 3 evals" in both.message


def test_mixed_batch_sizes(tmp_path):
    logs = write_runs(tmp_path / "logs", count=9)
    write_run(logs / "result_9.txt", seed=99, system=micro_system(batch_size=64))
    output = check_fails(logs)
    assert "mixed batch sizes: global_batch_size 32 in result_0.txt" in output
    assert "64 in result_9.txt; the RCP checker compares one batch size per folder" in output


def test_folder_with_nine_runs(tmp_path):
    logs = write_runs(tmp_path / "logs", count=9)
    output = check_fails(logs)
    assert f"{logs}: 9 result logs; a BERT submission needs exactly 10: add 1 (NEXP=1 ./run_and_time.sh SYSTEM " \
           "appends them)" in output


def test_repeated_seeds_warn_in_open_and_fail_in_closed(tmp_path):
    logs = write_runs(tmp_path / "open")
    write_run(logs / "result_1.txt", seed=1)
    result = cli("check", logs)
    assert result.exit_code == 0, result.output
    assert "WARNING" in result.output and "seeds repeated across runs (1 in result_0.txt, result_1.txt)" \
        in result.output
    closed = write_runs(tmp_path / "closed", system=micro_system("closed", 448), **CLOSED_RUN)
    write_run(closed / "result_1.txt", seed=1, system=micro_system("closed", 448), **CLOSED_RUN)
    output = check_fails(closed)
    assert "ERROR" in output and "seeds repeated across runs (1 in result_0.txt, result_1.txt); every run needs " \
                                 "its own seed" in output


def test_batch_size_outside_the_reference_convergence_points(tmp_path):
    logs = write_runs(tmp_path / "logs", system=micro_system("closed", 32768), **CLOSED_RUN)
    output = check_fails(logs)
    assert "global_batch_size 32768 is above the largest reference convergence point (16384); the RCP checker " \
           "fails it ('Missing RCP')" in output
    assert "FAIL    RCP checker" in output and "Missing RCP, please submit RCP with BS = 32768" in output
