"""`mlperf-bert log seal` (bert.cli.logs): a log cut off before its run_stop is sealed as aborted (exit 1), a
finished one is left as it is (exit 0 for a success). A log that cannot be finished (exit 3):
tests/faults/test_finished_logs.py."""

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from bert.cli import main
from bert.cli.logs import NOT_FINISHED
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


@pytest.mark.parametrize("plant, kind", [(os.mkfifo, "a named pipe (FIFO)"),
                                         (lambda path: path.symlink_to("/dev/zero"), "a device")])
def test_a_fifo_or_a_link_to_a_device_is_no_log_to_finish_in_one_line(tmp_path, plant, kind):
    """seal hung opening a FIFO and read /dev/zero until memory ran out (5.6 GB in 10 s)."""
    log = tmp_path / "result_0.txt.partial"
    plant(log)
    proc = subprocess.run([sys.executable, "-m", "bert.cli", "log", "seal", str(log), "--reason", "killed"],
                          capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (NOT_FINISHED, "")
    assert proc.stderr.splitlines() == [f"error: {log}: is {kind}, not a regular file, so it is no log to finish; "
                                        "the run logs to a plain file"]


def test_a_log_cut_off_in_a_line_longer_than_any_run_writes_is_sealed(tmp_path):
    """Read a block at a time: a cut-off line of megabytes (a rank killed while writing garbage) is neither held
    whole nor taken for a run_stop, and the log gets its aborted one on a line of its own."""
    log = tmp_path / "result_0.txt.partial"
    run = RunLog(log, echo=False)
    run.run_start()
    run.close()
    with open(log, "a") as f:
        f.write(":::MLLOG " + "x" * (3 << 20))
    sealed = CliRunner().invoke(main, ["log", "seal", str(log), "--reason", "rank 0 killed"])
    assert sealed.exit_code == 1, sealed.output
    last = log.read_text().splitlines()[-1]  # read as text: check refuses a log holding a line that long
    stop = json.loads(last.removeprefix(":::MLLOG "))
    assert (stop["key"], stop["metadata"]["status"]) == ("run_stop", "aborted")
