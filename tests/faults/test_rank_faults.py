"""A rank that dies or stops responding mid-run: every process ends within the process-group timeout, and
rank 0's log ends with an aborted run_stop that says why."""

import os
import signal
import time

from tests.faults.conftest import (
    CASE_TIMEOUT_S,
    alive,
    assert_log_aborted,
    descendants,
    fault_descriptor,
    finish,
    rank_pid,
    torchrun,
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


def test_a_stopped_rank_ends_the_run_within_the_timeout(tmp_path, fault_data, fault_env):
    log = tmp_path / "result_0.txt"
    proc = torchrun(fault_descriptor(tmp_path), fault_data, log, fault_env)
    wait_for_training((tmp_path, log.name), proc)
    workers = descendants(proc.pid)
    stopped = rank_pid(proc.pid, 1)
    started = time.monotonic()
    os.kill(stopped, signal.SIGSTOP)
    try:
        code, _, err = finish(proc)
    finally:
        if alive([stopped]):
            os.kill(stopped, signal.SIGKILL)
    assert code != 0
    assert time.monotonic() - started < CASE_TIMEOUT_S
    assert not alive(workers)
    metadata = assert_log_aborted(log, "")
    assert "timed out" in metadata["reason"].lower() or "timeout" in metadata["reason"].lower(), metadata
