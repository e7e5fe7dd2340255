"""The report's accuracy figure draws the target the runs logged (a development system's own, not MLPerf's 0.720),
and MLPerf's where the logs do not agree on one or state none."""

from compliance.plots import MLPERF_TARGET, logged_target
from compliance.result_log import read_result_log
from tests.compliance.fakes import micro_system, write_run


def test_the_target_drawn_is_the_one_the_runs_logged(tmp_path):
    micro = micro_system()
    logs = [read_result_log(write_run(tmp_path / f"result_{i}.txt", i, micro)) for i in range(2)]
    assert logged_target(logs) == micro.run.eval.target_accuracy == 0.06
    other = micro.variant({"eval.target_accuracy": 0.5})
    logs.append(read_result_log(write_run(tmp_path / "result_2.txt", 2, other)))
    assert logged_target(logs) == MLPERF_TARGET  # two targets: none of them is the runs'
    stated = tmp_path / "result_3.txt"
    stated.write_text("".join(line for line in (tmp_path / "result_0.txt").open() if "target_accuracy" not in line))
    assert logged_target([read_result_log(stated)]) == MLPERF_TARGET
