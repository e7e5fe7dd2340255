"""A rank that dies or stops responding mid-run: every process ends within the process-group timeout, and
rank 0's log ends with an aborted run_stop that says why."""

import os
import signal
import time

import pytest

from tests.helpers.faults import (
    DIST_TIMEOUT_S,
    alive,
    assert_log_aborted,
    descendants,
    fault_descriptor,
    finish,
    rank_pid,
    run_and_time,
    start_ranks,
    wait_bounded,
    wait_for_training,
)


# SIGABRT is how NCCL's watchdog ends a rank whose collective ran past the process-group timeout: from a C++
# thread, before the trainer can write run_stop, so run_and_time.sh's `log seal` is what ends the log then.
@pytest.mark.parametrize("rank, sig", [(1, signal.SIGKILL), (0, signal.SIGKILL), (0, signal.SIGABRT)],
                         ids=["rank 1 killed", "rank 0 killed", "rank 0 aborted"])
def test_a_killed_rank_aborts_the_run(tmp_path, fault_data, fault_env, rank, sig):
    results = tmp_path / "logs" / "faulty_micro"
    proc = run_and_time(fault_descriptor(tmp_path), tmp_path / "logs", fault_data, fault_env)
    wait_for_training((results, "result_0.txt.partial"), proc)
    workers = descendants(proc.pid)
    os.kill(rank_pid(proc.pid, rank), sig)
    code, _, err = finish(proc)
    assert code == 1, err[-3000:]
    assert not alive(workers)
    assert "run 1 FAILED" in err and "1 of 1 run(s) failed: result_0.txt" in err
    metadata = assert_log_aborted(results / "result_0.txt", "")
    if rank == 0:  # nothing of rank 0 could write run_stop: run_and_time.sh sealed the log
        assert "the ranks ended without run_stop (launcher exit status 1)" in metadata["reason"]
    else:  # rank 0 saw the connection drop (a gloo error), or torchrun told it to stop (SIGTERM)
        assert any(word in metadata["reason"] for word in ("RuntimeError", "DistBackendError", "SIGTERM")), metadata


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
