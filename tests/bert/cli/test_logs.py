"""`mlperf-bert log seal` (bert.cli.logs): a log cut off before its run_stop is sealed as aborted (exit 1), a
finished one is left as it is (exit 0 for a success). A log that cannot be finished (exit 3):
tests/faults/test_finished_logs.py."""

from click.testing import CliRunner

from bert.cli import main
from bert.mllog import RunLog
from compliance.result_log import read_result_log


def test_a_cut_off_log_is_sealed_as_aborted_and_a_finished_one_left_as_it_is(tmp_path):
    log = tmp_path / "result_0.txt.partial"
    run = RunLog(log, echo=False)
    run.run_start()
    run.close()
    sealed = CliRunner().invoke(main, ["log", "seal", str(log), "--reason", "rank 0 killed"])
    assert sealed.exit_code == 1
    assert sealed.output == f"{log}: ended without run_stop; sealed with an aborted run_stop (rank 0 killed)\n"
    stop = read_result_log(log).events[-1]
    assert (stop.key, stop.metadata["status"]) == ("run_stop", "aborted")
    assert "rank 0 killed" in stop.metadata["reason"]
    finished = tmp_path / "result_1.txt"
    run = RunLog(finished, echo=False)
    run.run_start()
    run.run_stop("success", 64, 16)
    run.close()
    before = finished.read_bytes()
    kept = CliRunner().invoke(main, ["log", "seal", str(finished), "--reason", "launcher said so"])
    assert (kept.exit_code, kept.output) == (0, "")
    assert finished.read_bytes() == before
