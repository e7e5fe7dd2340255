"""The judgement of result logs, rule by rule: each pattern of the published (genuine) BERT logs beside the forged
counterpart that must fail. No official tool runs here (tests/faults/test_forged_logs.py runs them); where a rule
reads the compliance checker's verdict, the verdict is the one that checker gives such a log."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import threading

import pytest

from compliance.checkers import CheckResult
from compliance.findings import ERROR, WARNING
from compliance.judgement import copied_runs, count_run, dropped_runs, judge_run, platform_findings
from compliance.precheck import log_findings, read_system_json
from compliance.result_log import read_result_log, result_logs_in
from tests.compliance.fakes import (
    as_two_nodes,
    started_twice,
    stating_platform,
    stopped_early,
    truncated,
    with_slow_init,
    with_value,
    write_package,
    write_run,
    write_runs,
    zero_minutes,
)


def _errors(path) -> list[str]:
    return [f.message for f in judge_run(read_result_log(path)) if f.level == ERROR]


def _failing(problem: str) -> CheckResult:
    """The compliance checker's verdict on a log it fails for `problem` (its own words)."""
    return CheckResult("compliance checker", "x", False, f"WARNING -  {problem}\nERROR - FAILED")


def test_per_rank_lines_out_of_order_and_skewed_clocks_are_genuine(tmp_path):
    log = as_two_nodes(write_run(tmp_path / "result_0.txt", seed=1), ranks=16, skew_ms=2800)
    read = read_result_log(log)
    assert len(read.all("init_start")) == 16
    assert any(b.time_ms < a.time_ms - 1000 for a, b in zip(read.events, read.events[1:]))  # goes back > 1 s
    assert _errors(log) == []
    early = stopped_early(write_run(tmp_path / "result_1.txt", seed=2), seconds=10)
    (said,) = _errors(early)
    assert re.search(r"\(train_samples\) is logged 1\d\.\d s before line \d+ \(eval_stop\) above it", said)
    assert "the timed lines of a run go forward" in said


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
    assert one.message.startswith("a copy of one run (result_8.txt of result_3.txt): every line from run_start to "
                                  "run_stop holds the same value at the same time after run_start. The official tools "
                                  "accept this, but no two genuine runs are identical to the millisecond")
    shutil.copyfile(logs / "result_3.txt", logs / "result_6.txt")  # a second copy, every time shifted a day
    text = (logs / "result_6.txt").read_text()
    (logs / "result_6.txt").write_text("\n".join(
        ":::MLLOG " + json.dumps(dict(e, time_ms=e["time_ms"] + 86_400_000))
        for e in (json.loads(line[len(":::MLLOG "):]) for line in text.splitlines())) + "\n")
    (both,) = _copied(logs)
    assert both.level == ERROR and both.message.startswith("copies of one run (result_6.txt of result_3.txt; "
                                                           "result_8.txt of result_3.txt)")


def _description(nodes: str, per_node: str = "8", name: str = "") -> dict:
    return {"number_of_nodes": nodes, "accelerators_per_node": per_node, "system_name": name}


def _logs_stating(folder, platforms: list[str | None]) -> list:
    folder.mkdir(parents=True)
    return [read_result_log(stating_platform(write_run(folder / f"result_{i}.txt", seed=i), platform))
            for i, platform in enumerate(platforms)]


def test_platforms_as_published_pass_and_swapped_results_folders_fail(tmp_path):
    descriptions = {"nyx_n1": _description("1", name="Nyx (1x NVIDIA DGX B200)"),
                    "tyche_ngpu64": _description("16", "4", "Tyche (1x NVIDIA GB200 NVL72)"),
                    "AS-4126GS-NBR-LCC_N2": _description("2"), "7920T_2xA5000_hdd": _description("1", "2"),
                    "tinybox_red": _description("1", "6", "tinybox red")}
    genuine = {"nyx_n1": _logs_stating(tmp_path / "a", ["1xNVIDIA HGX B200", None]),
               "tyche_ngpu64": _logs_stating(tmp_path / "b", ["16xNVIDIA GB200"]),
               "AS-4126GS-NBR-LCC_N2": _logs_stating(tmp_path / "c", ["2xSUBMISSION_PLATFORM_PLACEHOLDER"]),
               "7920T_2xA5000_hdd": _logs_stating(tmp_path / "d", ["2xA5000"]),
               "tinybox_red": _logs_stating(tmp_path / "e", ["tinybox_red"])}
    assert platform_findings(tmp_path, descriptions, genuine) == []
    swapped = dict(genuine, nyx_n1=genuine["tyche_ngpu64"], tyche_ngpu64=genuine["nyx_n1"])
    said = [f.message for f in platform_findings(tmp_path, descriptions, swapped)]
    assert len(said) == 2 and all("are the results folders of two systems swapped?" in m for m in said)
    assert "its count (16) is neither the 1 node(s) nor the 8 accelerators of systems/nyx_n1.json" in said[0]
    named = {"2xXE9712x4GB200": _description("2", "4", "2xXE9712x4GB200"),
             "2xXE9680Lx8B200": _description("2", "8", "2xXE9680Lx8B200")}
    crossed = {"2xXE9712x4GB200": _logs_stating(tmp_path / "f", ["2xXE9680Lx8B200"]),
               "2xXE9680Lx8B200": _logs_stating(tmp_path / "g", ["2xXE9680Lx8B200"])}
    said = [f.message for f in platform_findings(tmp_path, named, crossed)]
    assert len(said) == 1 and "it names the package's other system 2xXE9680Lx8B200" in said[0]


def test_system_json_fields_are_checked_as_the_official_tools_read_them(tmp_path):
    org = write_package(tmp_path / "Org")
    path = org / "systems" / "cpu_micro.json"
    published = json.loads(path.read_text())
    published["other_software_stack"] = {"cuda_version": "12.4", "nccl_version": "2.22.3-1+cuda12.6"}
    published["host_memory_configuration"] = ["16x 64GB", "DDR5"]
    published["number_of_nodes"] = 1
    path.write_text(json.dumps(published))
    assert read_system_json(path)[1] == []
    published["framework"] = {"name": "PyTorch"}
    path.write_text(json.dumps(published))
    (finding,) = read_system_json(path)[1]
    assert finding.blocks and "framework: must be a string, got {'name': 'PyTorch'}" in finding.message


def _within(seconds: float, work):
    """work() in a thread; fails the test when it is still running after `seconds` (a read that hangs)."""
    result = []
    thread = threading.Thread(target=lambda: result.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    return result[0]


def test_a_fifo_a_device_and_a_huge_file_are_refused_unread(tmp_path):
    os.mkfifo(tmp_path / "result_0.txt")
    (tmp_path / "result_1.txt").symlink_to("/dev/zero")
    with open(tmp_path / "result_2.txt", "wb") as f:
        f.truncate(65 << 20)  # sparse: over the cap without writing it
    said = [_within(10, lambda p=p: read_result_log(p)).unreadable for p in result_logs_in(tmp_path)]
    assert said[0].startswith("is a named pipe (FIFO), not a regular file")
    assert said[1].startswith("is a device, not a regular file")
    assert said[2] == f"is {65 << 20:,} bytes, over the {64 << 20:,} bytes such a file can be; it is not read"
