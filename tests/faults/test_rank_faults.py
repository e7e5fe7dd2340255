"""A rank that dies or stops responding mid-run: every process ends within the process-group timeout, and
rank 0's log ends with an aborted run_stop that says why."""

import os
import signal
import time

from tests.faults.conftest import (
    DIST_TIMEOUT_S,
    alive,
    assert_log_aborted,
    descendants,
    fault_descriptor,
    finish,
    rank_pid,
    start_ranks,
    torchrun,
    wait_bounded,
    wait_for_training,
)


def test_a_killed_rank_aborts_the_run(tmp_path, fault_data, fault_env):
    log = tmp_path / "result_0.txt"
    proc = torchrun(fault_descriptor(tmp_path), fault_data, log, fault_env)
    wait_for_training((tmp_path, log.name), proc)
    workers = descendants(proc.pid)
    os.kill(rank_pid(proc.pid, 1), signal.SIGKILL)
    code, _, err = finish(proc)
    assert code != 0
    assert not alive(workers)
    # Rank 0 either sees the connection drop (a gloo error) or is told to stop by torchrun (SIGTERM).
    metadata = assert_log_aborted(log, "")
    assert any(word in metadata["reason"] for word in ("DistBackendError", "RuntimeError", "SIGTERM")), metadata


def test_a_stopped_rank_ends_the_others_within_the_timeout(tmp_path, fault_data, fault_env):
    log = tmp_path / "result_0.txt"
    rank0, rank1 = start_ranks(fault_descriptor(tmp_path), fault_data, log, fault_env, tmp_path)
    wait_for_training((tmp_path, log.name), rank0)
    rank1.send_signal(signal.SIGSTOP)
    started = time.monotonic()
    try:
        (code,) = wait_bounded([rank0])
    finally:
        rank1.kill()
        rank1.wait()
    assert code != 0
    assert time.monotonic() - started < DIST_TIMEOUT_S + 15  # the timeout, then ending the run
    metadata = assert_log_aborted(log, "")
    assert "timed out" in metadata["reason"].lower(), metadata
