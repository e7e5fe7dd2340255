"""Forged results never pass `check`, `package` or `score`, and genuine ones do: the patterns of the published BERT
logs (per-rank lines out of order, nodes' clocks apart, a placeholder platform, an object in the system JSON, a
dropped run that failed its initialisation time) pass the official tools and ours; a log that no genuine run
writes is refused, by each command, in one line saying why."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from compliance.score import score
from tests.compliance.fakes import (
    CLOSED_RUN,
    as_two_nodes,
    micro_system,
    started_twice,
    stating_platform,
    stopped_early,
    time_of,
    truncated,
    with_slow_init,
    with_value,
    write_package,
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


FORGERIES = {
    "success below the target": (_below_target, "run_stop says success, but no eval_accuracy between run_start and "
                                                "run_stop reached the target 0.06 (best: 0.0100)"),
    "two run_stop lines": (_stopped_twice, "2 run_stop lines (run_stop status success, aborted): a run starts and "
                                           "stops its clock once"),
    "two run_start lines": (started_twice, "2 run_start lines"),
    "run_stop before run_start": (_stop_before_start, "is not after run_start"),
    "a zero-minute run": (zero_minutes, "run_stop is logged at run_start's time: the run trained and evaluated in "
                                        "no time"),
    "run_stop moved before the last eval": (stopped_early, "between run_start and run_stop; nodes' clocks differ"),
    "accuracy Infinity": (lambda log: with_value(log, "eval_accuracy", "value", float("inf")),
                          "eval_accuracy inf is no accuracy"),
    "time NaN": (lambda log: with_value(log, "run_stop", "time_ms", float("nan")), "has time_ms nan"),
    "a run copied ten times": (_copied_ten_times, "copies of one run (result_1.txt of result_0.txt; result_2.txt of "
                                                  "result_0.txt; result_3.txt of result_0.txt"),
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
    assert "copies of one run (result_4.txt of result_0.txt; result_5.txt of result_0.txt)" in said
    assert "no two genuine runs are identical to the millisecond" in said


def _descriptor_beside_the_code(org, system) -> None:
    """The descriptor of the runs in the implementation folder, where `package` writes it."""
    system.write(org / "benchmarks" / "bert" / "implementations" / "pytorch" / "systems")


def test_score_refuses_a_package_of_forged_logs_and_swapped_results(tmp_path):
    """A log edited to a lower target than the packaged descriptor's (each run cut at its first eval), a zero-minute
    run, and the results folders of two systems swapped (each log's platform names the other system's nodes)."""
    one, two = micro_system(), micro_system().variant(name="micro_2n", description={"system_name": "micro_2n"})
    org = write_package(tmp_path / "MLPerf", one)
    write_runs(org / "results" / "micro_2n" / "bert", system=two, first_seed=20)
    (org / "systems" / "micro_2n.json").write_text(json.dumps(dict(two.description, number_of_nodes="2")))
    _descriptor_beside_the_code(org, one)
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
    assert "are the results folders of two systems swapped?" in said


def test_genuine_patterns_pass_the_official_tools_and_ours(tmp_path):
    """Two closed-division systems as published. A 2-node one: every rank logs cache_clear and init_start, a few ms
    out of order, the nodes' clocks 2 s apart; the platform is a placeholder; other_software_stack is an object;
    one run took 31 minutes to initialise. A 1-node one that logs no platform, one of whose logs ends before
    run_stop. The compliance checker fails those two logs, and the package checker drops each as its system's run
    under olympic scoring."""
    system = micro_system("closed", 448)
    org = write_package(tmp_path / "MLPerf", system, **CLOSED_RUN)
    write_runs(org / "results" / "micro_1n" / "bert", system=system, first_seed=20, **CLOSED_RUN)
    description = json.loads((org / "systems" / "cpu_micro.json").read_text())
    (org / "systems" / "micro_1n.json").write_text(json.dumps(dict(description, other_software_stack=["CUDA 12.4"])))
    (org / "systems" / "cpu_micro.json").write_text(json.dumps(dict(
        description, number_of_nodes="2", other_software_stack={"cuda_version": "12.4", "nccl_version": "2.22.3"})))
    for index in range(10):
        two_nodes = org / "results" / "cpu_micro" / "bert" / f"result_{index}.txt"
        stating_platform(as_two_nodes(two_nodes), "2xSUBMISSION_PLATFORM_PLACEHOLDER")
        stating_platform(org / "results" / "micro_1n" / "bert" / f"result_{index}.txt", None)
    with_slow_init(org / "results" / "cpu_micro" / "bert" / "result_4.txt")
    truncated(org / "results" / "micro_1n" / "bert" / "result_7.txt")
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
