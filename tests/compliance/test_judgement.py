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
from compliance.judgement import copied_runs, count_run, dropped_runs, judge_run, package_judgement, platform_findings
from compliance.precheck import log_findings, read_system_json
from compliance.result_log import read_result_log, result_logs_in
from tests.compliance.fakes import (
    CLOSED_RUN,
    as_two_nodes,
    clock_moved_in,
    compressed,
    edit_events,
    evals_printed_late,
    evaluated_offline,
    micro_system,
    moved_to_start,
    started_twice,
    stating_platform,
    stopped_early,
    time_of,
    truncated,
    with_slow_init,
    with_stated_system,
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
    assert re.fullmatch(r"run_stop \(line \d+\) is timed 10\.000 s before the eval that reached the target \(line "
                        r"\d+: eval_accuracy 0\.07000003 at epoch_num 3072\): a run stops its clock when that eval "
                        r"ends, so the score understates the time to train by 0\.1667 minutes\. The official tools "
                        r"accept it; no honest log does", said)


def test_a_clock_started_late_or_stopped_early_is_refused_in_minutes(tmp_path):
    """run_start moved 4.9 s later and run_stop 4.9 s earlier: the first block now starts before the clock, the last
    eval ends after it. Nodes' clock differences are no excuse: they would shorten the run."""
    started_late = with_value(write_run(tmp_path / "result_0.txt", seed=1), "run_start", "time_ms",
                              time_of(tmp_path / "result_0.txt", "block_start") + 4900)
    (said,) = _errors(started_late)
    assert re.fullmatch(r"line \d+ \(block_start\) is timed 4\.900 s before run_start \(line \d+\): a run's work "
                        r"begins after its clock starts, so the scored time leaves out at least 4\.900 s\. Nodes' "
                        r"clocks may differ, but never so as to shorten the run; no genuine run writes this: .*", said)
    both = clock_moved_in(write_run(tmp_path / "result_1.txt", seed=2))
    assert "(block_start) is timed " in _errors(both)[0]
    stopped_early_only = clock_moved_in(write_run(tmp_path / "result_2.txt", seed=3), 0)
    assert _errors(stopped_early_only) == []
    edit_events(stopped_early_only, lambda _, e: dict(e, time_ms=e["time_ms"] - 4900) if e["key"] == "run_stop" else e)
    assert "understates the time to train by 0.0" in _errors(stopped_early_only)[0]


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


def _retouched_copy(source, copy, seed, touch) -> None:
    shutil.copyfile(source, copy)
    with_value(copy, "seed", "value", seed)
    touch(copy)


def test_copies_are_judged_by_what_a_run_measured(tmp_path):
    """Copies with another seed and one field no tool reads changed (metadata.lineno, metadata.file), or one line
    moved by a few ms, or every time after run_start moved by seconds: the same measurements, refused. Genuine runs
    (their own accuracies) are none."""
    logs = write_runs(tmp_path / "logs", accuracies=(0.3, 0.5, 0.6, 0.65, 0.68, 0.7, 0.71))
    assert _copied(logs) == []
    source = logs / "result_0.txt"
    touches = {
        1: lambda c: edit_events(c, lambda i, e: dict(e, metadata=dict(e["metadata"], lineno=7)) if i == 20 else e),
        2: lambda c: edit_events(c, lambda i, e: dict(e, metadata=dict(e["metadata"], file="x.py")) if i == 3 else e),
        3: lambda c: with_value(c, "eval_accuracy", "time_ms", time_of(c, "eval_accuracy") + 4),
        4: lambda c: compressed(c, 1.2),  # every time moved: the accuracies alone, of another seed
    }
    for index, touch in touches.items():
        _retouched_copy(source, logs / f"result_{index}.txt", 1000 + index, touch)
    (found,) = _copied(logs)
    assert found.level == ERROR
    for index in (1, 2, 3):
        assert f"result_{index}.txt of result_0.txt: 7 of its 7 evals measure the same accuracy at the same " \
               "epoch_num, within 100 ms" in found.message
    assert "result_4.txt of result_0.txt: 7 of its 7 evals measure the same accuracy at the same epoch_num as a run " \
           "of another seed (1004, 1)" in found.message


def test_short_or_rounded_measurements_are_no_evidence_of_a_copy(tmp_path):
    """Logs that round their accuracies to two digits, or hold two evals, repeat each other by chance (and a
    deterministic system repeats its timings closely): such runs are never called copies. Nor are the runs of one
    seed on two systems of a deterministic implementation (Dell's v3.0 package holds one): the same accuracies,
    other times."""
    logs = tmp_path / "logs"
    logs.mkdir()
    for index in range(3):
        log = write_run(logs / f"result_{index}.txt", seed=index, accuracies=(0.3, 0.5, 0.6, 0.65, 0.7, 0.72))
        edit_events(log, lambda _, e: dict(e, value=round(e["value"], 2)) if e["key"] == "eval_accuracy" else e)
    for index in (3, 4):
        write_run(logs / f"result_{index}.txt", seed=index, accuracies=(0.3, 0.72))
        shutil.copyfile(logs / "result_3.txt", logs / "result_4.txt") if index == 4 else None
    with_value(logs / "result_4.txt", "seed", "value", 99)
    with_value(logs / "result_4.txt", "eval_accuracy", "time_ms", time_of(logs / "result_4.txt", "eval_accuracy") + 30)
    assert _copied(logs) == []
    one, two = micro_system(system_name="one"), micro_system(system_name="two")
    same_seed = {"one": [read_result_log(write_run(tmp_path / "one.txt", seed=7, system=one, **CLOSED_RUN))],
                 "two": [read_result_log(compressed(write_run(tmp_path / "two.txt", seed=7, system=two, **CLOSED_RUN),
                                                    0.8))]}
    assert package_judgement(tmp_path, {}, same_seed) == []
    again = {"one": same_seed["one"], "two": [read_result_log(shutil.copyfile(tmp_path / "one.txt",
                                                                             tmp_path / "three.txt"))]}
    (copied,) = package_judgement(tmp_path, {}, again)
    assert copied.message.startswith("results/two/bert/three.txt is a copy of results/one/bert/one.txt (8 of its 8 "
                                     "evals measure the same accuracy at the same epoch_num, within 100 ms")


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
    assert len(said) == 2 and all("are these another system's results?" in m for m in said)
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


def test_the_hardware_a_log_names_must_be_its_systems(tmp_path):
    """Dell's B200 logs name their model in the platform and print the system they ran on (:::SYSJSON); under an
    H200 system both contradict it: the printed system is refused, the free-text platform warned of. A platform
    that names no model (a placeholder), or the same model by another name ("Dell B200" for "NVIDIA Blackwell GPU
    (B200-SXM-180GB)"), is genuine."""
    h200 = dict(_description("2", "8", "2xXE9680Lx8H200-SXM-141GB"), accelerator_model_name="NVIDIA H200-SXM5-141GB")
    b200 = dict(h200, accelerator_model_name="NVIDIA Blackwell GPU (B200-SXM-180GB)")
    named = _logs_stating(tmp_path / "a", ["2xXE9680Lx8B200-SXM-180GB"])
    found = platform_findings(tmp_path, {"h200": h200}, {"h200": named})
    assert [f.level for f in found] == [WARNING]  # free text: NVIDIA's accepted v2.0 2xa30 logs name an A100
    said = [f.message for f in found]
    assert said == ["the logs state submission_platform '2xXE9680Lx8B200-SXM-180GB', but it names B200 accelerators, "
                    "and systems/h200.json has 'NVIDIA H200-SXM5-141GB': are these another system's results? The "
                    "official tools do not compare them; results/<name>/ must hold the runs of systems/<name>.json"]
    assert platform_findings(tmp_path, {"b200": b200}, {"b200": named}) == []
    printed = tmp_path / "b" / "result_0.txt"
    printed.parent.mkdir()
    with_stated_system(write_run(printed, seed=1), dict(b200, accelerator_model_name="Dell B200"))
    logs = {"h200": [read_result_log(printed)]}
    (found,) = package_judgement(tmp_path, {"h200": h200}, logs)
    assert found.message.startswith("result_0.txt prints the system it ran on (:::SYSJSON): B200 accelerators, and "
                                    "systems/h200.json has 'NVIDIA H200-SXM5-141GB'. These are another system's")
    assert package_judgement(tmp_path, {"b200": b200}, {"b200": logs["h200"]}) == []
    nodes = dict(b200, number_of_nodes="4")
    (found,) = package_judgement(tmp_path, {"b200": nodes}, {"b200": logs["h200"]})
    assert "(:::SYSJSON): number_of_nodes 2, and systems/b200.json has 4" in found.message


def test_a_package_run_faster_than_its_system_is_refused(tmp_path):
    """The least time from the system JSON: 2.4 million samples of BERT-large on 8 B200 take seconds; the same on a
    model the table does not know is counted at more than any accelerator made."""
    nyx = dict(_description("1", "8", "nyx"), accelerator_model_name="NVIDIA Blackwell GPU (B200-SXM-180GB)")
    system = micro_system("closed", 448)
    folder = tmp_path / "nyx"
    folder.mkdir()
    genuine = read_result_log(write_run(folder / "result_0.txt", seed=1, system=system, **CLOSED_RUN))
    fast = read_result_log(compressed(write_run(folder / "result_1.txt", seed=2, system=system, **CLOSED_RUN), 100))
    assert package_judgement(tmp_path, {"nyx": nyx}, {"nyx": [genuine]}) == []
    (found,) = package_judgement(tmp_path, {"nyx": nyx}, {"nyx": [genuine, fast]})
    assert found.where.endswith("results/nyx/bert/result_1.txt")
    assert "takes at least 0.06679 minutes (4.007 s) on 8 NVIDIA Blackwell GPU (B200-SXM-180GB) of " \
           "systems/nyx.json, counted at 18 PFLOP/s each: no run is faster than its hardware" in found.message
    unknown = dict(nyx, accelerator_model_name="Acme Tensor Engine 9")
    (found,) = package_judgement(tmp_path, {"nyx": unknown}, {"nyx": [genuine, fast]})
    assert "8 Acme Tensor Engine 9 of systems/nyx.json, counted at 50 PFLOP/s each (a model not in the table: more " \
           "than any accelerator made)" in found.message
