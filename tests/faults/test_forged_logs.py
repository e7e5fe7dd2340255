"""Forged results never pass `check`, `package` or `score`, and genuine ones do: the patterns of the published BERT
logs (per-rank lines out of order, nodes' clocks apart, a placeholder platform, an object in the system JSON, a
dropped run that failed its initialisation time) pass the official tools and ours; a log that no genuine run
writes is refused, by each command, in one line saying why. The forms of the fourth hostile round are built on
packages shaped like NVIDIA's nyx_n1 (one node of 8 B200) and Dell's two 2-node systems (B200 and H200)."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from compliance.score import score
from tests.compliance.fakes import (
    CLOSED_RUN,
    add_system,
    as_two_nodes,
    clock_moved_in,
    compressed,
    edit_events,
    evals_printed_late,
    gpu_system,
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
    write_published_package,
    write_run,
    write_runs,
    zero_minutes,
)
from tests.helpers.compliance import cli

FORGED = 3  # the run whose log is tampered with


def _below_target(log) -> None:
    write_run(log, seed=50, accuracies=(0.01, 0.01, 0.01))  # run_stop success; the target is 0.06


def _stopped_twice(log) -> None:
    stop = next(line for line in log.read_text().splitlines() if '"key": "run_stop"' in line)
    again = json.loads(stop.split(":::MLLOG ", 1)[1])
    again["metadata"]["status"], again["time_ms"] = "aborted", again["time_ms"] + 1
    log.write_text(log.read_text() + f":::MLLOG {json.dumps(again)}\n")


def _stop_before_start(log) -> None:
    with_value(log, "run_stop", "time_ms", time_of(log, "run_start") - 3360)  # scored as -0.056 minutes


def _copied_ten_times(log) -> None:
    for other in log.parent.glob("result_*.txt"):
        if other.name != "result_0.txt":
            shutil.copyfile(log.parent / "result_0.txt", other)


def _copied_and_touched(log) -> None:
    """Nine copies of result_0.txt, each with its own seed, and in each one metadata.lineno changed (in result_3,
    a line moved by 7 ms instead): fields no tool reads, and a time no score depends on."""
    for index in range(1, 10):
        copy = log.parent / f"result_{index}.txt"
        shutil.copyfile(log.parent / "result_0.txt", copy)
        with_value(copy, "seed", "value", 1000 + index)
        if index == 3:
            with_value(copy, "eval_stop", "time_ms", time_of(copy, "eval_stop") + 7)
        else:
            edit_events(copy, lambda i, e: dict(e, metadata=dict(e["metadata"], lineno=i + 1000)) if i == 12 else e)


_COPIES = "copies of one run (result_1.txt of result_0.txt: 3 of its 3 evals measure the same accuracy at the same " \
          "epoch_num, within 100 ms of the same time since run_start; result_2.txt of result_0.txt"

FORGERIES = {
    "success below the target": (_below_target, "run_stop says success, but no eval_accuracy timed between run_start "
                                                "and run_stop reached the target 0.06 (best: 0.0100)"),
    "two run_stop lines": (_stopped_twice, "2 run_stop lines (run_stop status success, aborted): a run starts and "
                                           "stops its clock once"),
    "two run_start lines": (started_twice, "2 run_start lines"),
    "run_stop before run_start": (_stop_before_start, ") is timed before run_start (line "),
    "a zero-minute run": (zero_minutes, "run_stop is logged at run_start's time: the run trained and evaluated in "
                                        "no time"),
    "run_stop moved before the last eval": (stopped_early, "is timed 10.000 s before the eval that reached the target "
                                                           "(line "),
    "run_start and run_stop moved 4.9 s in": (clock_moved_in, "(block_start) is timed "),
    "accuracy Infinity": (lambda log: with_value(log, "eval_accuracy", "value", float("inf")),
                          "eval_accuracy inf is no accuracy"),
    "time NaN": (lambda log: with_value(log, "run_stop", "time_ms", float("nan")), "has time_ms nan"),
    "a run copied ten times": (_copied_ten_times, _COPIES),
    "copies touched where no tool reads": (_copied_and_touched, _COPIES),
}


@pytest.mark.parametrize("forge", FORGERIES, ids=list(FORGERIES))
def test_package_refuses_a_forged_log_and_writes_nothing(tmp_path, forge):
    logs = write_runs(tmp_path / "logs")
    tamper, message = FORGERIES[forge]
    tamper(logs / f"result_{FORGED}.txt")
    result = cli("package", "--system", "cpu_micro", "--logs", logs, "--out", tmp_path / "out")
    said = " ".join(result.output.split())
    assert result.exit_code == 1 and "not packaged, nothing written" in said, result.output
    assert message in said
    assert not (tmp_path / "out").exists()


def test_check_refuses_forged_logs_each_in_one_line(tmp_path):
    logs = write_runs(tmp_path / "logs")
    for index, forge in ((1, "a zero-minute run"), (2, "accuracy Infinity"), (6, "run_stop moved before the last "
                                                                                 "eval")):
        FORGERIES[forge][0](logs / f"result_{index}.txt")
    for copy in (4, 5):
        shutil.copyfile(logs / "result_0.txt", logs / f"result_{copy}.txt")
    result = cli("check", logs)
    said = " ".join(result.output.split())
    assert result.exit_code == 1 and "VERDICT: FAIL" in said
    for index, forge in ((1, "a zero-minute run"), (2, "accuracy Infinity"), (6, "run_stop moved before the last "
                                                                                 "eval")):
        assert f"result_{index}.txt: " in said and FORGERIES[forge][1] in said
    assert "the score understates the time to train by 0.1667 minutes" in said
    assert "copies of one run (result_4.txt of result_0.txt: 3 of its 3 evals measure the same accuracy" in said
    assert "; result_5.txt of result_0.txt: 3 of its 3 evals" in said
    assert "runs of different seeds never repeat each other's measurements" in said


def test_score_refuses_a_package_of_forged_logs_and_swapped_results(tmp_path):
    """A log edited to a lower target than the packaged descriptor's (each run cut at its first eval), a zero-minute
    run, and the results folders of two systems swapped (each log's platform names the other system's nodes)."""
    one, two = micro_system(), micro_system(system_name="micro_2n", number_of_nodes="2")
    org = write_package(tmp_path / "MLPerf", one)
    add_system(org, two, "micro_2n", first_seed=20)
    for index in range(10):  # the swap: results/cpu_micro holds 2-node runs, results/micro_2n 1-node ones
        stating_platform(org / "results" / "cpu_micro" / "bert" / f"result_{index}.txt", "2xcpu")
        stating_platform(org / "results" / "micro_2n" / "bert" / f"result_{index}.txt", "1xcpu")
    lowered = org / "results" / "cpu_micro" / "bert" / f"result_{FORGED}.txt"
    write_run(lowered, seed=FORGED + 1, accuracies=(0.04,), system=one.variant({"eval.target_accuracy": 0.01}))
    zero_minutes(org / "results" / "micro_2n" / "bert" / "result_5.txt")
    result = cli("score", org)
    said = " ".join(result.output.split())
    assert result.exit_code == 1 and "VERDICT: FAIL (the score does not stand" in said
    assert "target_accuracy is 0.06 in the descriptor, but 0.01 in result_3.txt" in said
    assert "results/micro_2n/bert/result_5.txt: run_stop is logged at run_start's time" in said
    assert "the logs state submission_platform '2xcpu', but its count (2) is neither the 1 node(s) nor" in said
    assert "are these another system's results?" in said


NYX = ("nyx_n1", 1, 8, "NVIDIA Blackwell GPU (B200-SXM-180GB)")  # NVIDIA's v5.0 package: one node of 8 B200
DELL_B200 = ("2xXE9680Lx8B200-SXM-180GB", 2, 8, "NVIDIA Blackwell GPU (B200-SXM-180GB)")  # Dell's two 2-node systems
DELL_H200 = ("2xXE9680Lx8H200-SXM-141GB", 2, 8, "NVIDIA H200-SXM5-141GB")


def _published(org, shape, first_seed=1, platform=None):
    """One published-style system of the package `org`, of `shape` (name, nodes, accelerators a node, model):
    closed-division runs that converge as CLOSED_RUN does, logging `platform` (default: the system's name)."""
    system = gpu_system(*shape, batch_size=448)
    system = system.variant(description={"system_name": platform}) if platform else system
    return write_published_package(org, system, shape[0], first_seed=first_seed, **CLOSED_RUN)


def test_a_run_faster_than_its_hardware_is_refused(tmp_path):
    """nyx_n1's form: every timed line moved to run_start + 1 ms (0.00002 minutes), or brought 1000 times closer to
    it; `report` showed both as PASS. Eight B200 need seconds to train the 2.4 million samples of BERT-large the
    logs state; the genuine runs take a minute here, and pass."""
    org = tmp_path / "NVIDIA"
    logs = _published(org, NYX, platform="1xNVIDIA HGX B200")
    genuine = cli("check", org)
    assert genuine.exit_code == 0 and "VERDICT: PASS" in genuine.output, genuine.output
    moved_to_start(logs / "result_2.txt")
    compressed(logs / "result_6.txt")
    result = cli("score", org)
    said = " ".join(result.output.split())
    assert result.exit_code == 1 and "VERDICT: FAIL (the score does not stand" in said
    assert "result_2.txt: run_start to run_stop is 0.00002 minutes (0.001 s), but training 2,400,000 samples of " \
           "BERT-large (240 GFLOP each at least) takes at least" in said
    assert "result_6.txt: run_start to run_stop is 0.0" in said and "on 8 NVIDIA Blackwell GPU (B200-SXM-180GB) of " \
           "systems/nyx_n1.json, counted at 18 PFLOP/s each: no run is faster than its hardware" in said


def test_another_systems_results_are_refused_across_the_package(tmp_path):
    """Dell's form: its 2-node B200 logs (which print the system they ran on and name it in their platform) filed
    under its 2-node H200 system scored the H200 at the B200's time; and the same ten logs filed under both
    systems passed, both scored. The genuine H200 logs (a placeholder platform, nothing printed) pass."""
    genuine = tmp_path / "genuine" / "Dell"
    _published(genuine, DELL_H200, platform="2xSUBMISSION_PLATFORM_PLACEHOLDER")
    assert cli("check", genuine).exit_code == 0
    swapped = tmp_path / "swapped" / "Dell"
    b200 = _published(tmp_path / "b200" / "Dell", DELL_B200)
    h200 = _published(swapped, DELL_H200)
    for log in b200.glob("result_*.txt"):
        shutil.copyfile(with_stated_system(log, gpu_system(*DELL_B200).description), h200 / log.name)
    said = " ".join(cli("check", swapped).output.split())
    assert "the logs state submission_platform '2xXE9680Lx8B200-SXM-180GB', but it names B200 accelerators, and " \
           "systems/2xXE9680Lx8H200-SXM-141GB.json has 'NVIDIA H200-SXM5-141GB': are these another system's " \
           "results?" in said
    assert "result_0.txt prints the system it ran on (:::SYSJSON): B200 accelerators, and " \
           "systems/2xXE9680Lx8H200-SXM-141GB.json has 'NVIDIA H200-SXM5-141GB'" in said
    twice = tmp_path / "twice" / "Dell"
    shutil.copytree(genuine, twice)
    _published(twice, DELL_B200, first_seed=20, platform="2xSUBMISSION_PLATFORM_PLACEHOLDER")
    for log in (twice / "results" / DELL_H200[0] / "bert").glob("result_*.txt"):
        shutil.copyfile(log, twice / "results" / DELL_B200[0] / "bert" / log.name)
    result = cli("score", twice)
    said = " ".join(result.output.split())
    assert result.exit_code == 1 and "VERDICT: FAIL (the score does not stand" in said
    assert f"results/{DELL_H200[0]}/bert/result_0.txt is a copy of results/{DELL_B200[0]}/bert/result_0.txt (8 of " \
           "its 8 evals measure the same accuracy at the same epoch_num, within 100 ms of the same time since " \
           "run_start); the official tools accept this" in said


def test_genuine_patterns_pass_the_official_tools_and_ours(tmp_path):
    """Two closed-division systems as published. A 2-node one: every rank logs cache_clear and init_start, a few ms
    out of order, the nodes' clocks 2 s apart; the platform is a placeholder; other_software_stack is an object;
    one run took 31 minutes to initialise. A 1-node one that logs no platform, one of whose logs ends before
    run_stop, one prints its evals late (after the last block_stop, each with its time), and one holds a cache_clear
    at a time ten times too large. The compliance checker fails the slow and the truncated log, and the package
    checker drops each as its system's run under olympic scoring."""
    org = tmp_path / "MLPerf"
    two_nodes = _published(org, ("cpu_micro", 2, 8, "NVIDIA H100-SXM5-80GB"))
    one_node = _published(org, ("micro_1n", 1, 8, "NVIDIA H100-SXM5-80GB"), first_seed=20)
    for name, stack in (("cpu_micro", {"cuda_version": "12.4", "nccl_version": "2.22.3"}), ("micro_1n", ["CUDA"])):
        description = json.loads((org / "systems" / f"{name}.json").read_text())
        (org / "systems" / f"{name}.json").write_text(json.dumps(dict(description, other_software_stack=stack)))
    for index in range(10):
        stating_platform(as_two_nodes(two_nodes / f"result_{index}.txt"), "2xSUBMISSION_PLATFORM_PLACEHOLDER")
        stating_platform(one_node / f"result_{index}.txt", None)
    with_slow_init(two_nodes / "result_4.txt")
    truncated(one_node / "result_7.txt")
    evals_printed_late(one_node / "result_2.txt")
    with_value(one_node / "result_5.txt", "cache_clear", "time_ms", time_of(one_node / "result_5.txt", "cache_clear")
               * 10)
    report = score(org)
    problems = [str(f) for f in report.check.findings + [f for row in report.check.rows for f in row.findings]]
    assert report.passed, problems
    assert report.scoring.package.output.count("1 file does not comply, accepting this under olympic scoring") == 2
    dropped = {row.label: row.why_not_counted for row in report.check.rows if row.why_not_counted}
    assert dropped.keys() == {"cpu_micro/result_4.txt", "micro_1n/result_7.txt"}
    assert "fails the compliance checker: CHECK for 'init_stop' failed" in dropped["cpu_micro/result_4.txt"]
    assert dropped["micro_1n/result_7.txt"] == "did not converge: no run_stop"
    assert [s.minutes for s in report.systems] == [row.minutes for row in report.scoring.rows]
    assert all(s.minutes > 0 for s in report.systems) and len(report.systems) == 2
    warned = " ".join(problems)
    assert "result_2.txt: eval_accuracy lines are printed late" in warned
    assert "result_5.txt: line 1 (cache_clear) has time_ms" in warned and "so the score stands" in warned


def test_a_fifo_or_a_device_under_a_result_name_is_refused_without_reading_it(tmp_path):
    logs = write_runs(tmp_path / "logs")
    (logs / "result_0.txt").unlink()
    os.mkfifo(logs / "result_0.txt")
    org = write_package(tmp_path / "MLPerf", count=1)
    zero = org / "results" / "cpu_micro" / "bert" / "result_0.txt"
    zero.unlink()
    zero.symlink_to("/dev/zero")
    for command in (["check", logs / "result_0.txt"], ["check", zero], ["score", org]):
        result = cli(*command)
        assert result.exit_code == 1 and "not a regular file" in result.output, result.output
    packaged = cli("package", "--system", "cpu_micro", "--logs", logs, "--out", tmp_path / "out")
    said = " ".join(packaged.output.split())
    assert packaged.exit_code == 1 and "result_0.txt: is a named pipe (FIFO), not a regular file" in said
    assert not (tmp_path / "out").exists()
