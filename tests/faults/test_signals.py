"""SIGTERM to the launcher (a Slurm time limit, a user): run_and_time.sh passes it to torchrun, which passes it
to the ranks; the run ends with an aborted run_stop and a flushed log, the result file is published, earlier
results are untouched and no further run of NEXP starts. A rank blocked in a collective ends at a second."""

import os
import signal
import time

from bert.interrupts import GRACE_S
from tests.helpers.faults import (
    alive,
    assert_log_aborted,
    descendants,
    fault_descriptor,
    finish,
    run_and_time,
    start_ranks,
    wait_bounded,
    wait_for_training,
)


def test_ctrl_c_to_a_wrapper_started_with_an_ampersand_aborts_the_run_and_starts_no_other(tmp_path, fault_data,
                                                                                         fault_env):
    """A wrapper started with `&` by a script inherits SIGINT ignored (bash cannot trap it): the ranks aborted
    while it started the next run. Its SIGINT now reaches the ranks once, as SIGINT, the log says so, and
    torchrun ends without a traceback. Earlier results are untouched."""
    logdir = tmp_path / "logs"
    earlier = logdir / "faulty_micro" / "result_0.txt"
    earlier.parent.mkdir(parents=True)
    earlier.write_text("an earlier result\n")
    proc = run_and_time(fault_descriptor(tmp_path), logdir, fault_data, fault_env, NEXP="3", in_background=True)
    wrapper = int(proc.stdout.readline())
    wait_for_training((earlier.parent, "result_1.txt.partial"), proc)
    workers = descendants(wrapper)
    os.kill(wrapper, signal.SIGINT)
    code, out, err = finish(proc)
    assert code == 128 + signal.SIGINT, err[-3000:]
    assert not alive(workers)
    assert earlier.read_text() == "an earlier result\n"
    assert sorted(p.name for p in earlier.parent.iterdir()) == ["result_0.txt", "result_1.txt"]
    assert_log_aborted(earlier.parent / "result_1.txt", "SIGINT received")
    assert out.count("RESULT,bert,") == 1 and "stopped by SIGINT after 1 of 3 run(s); no further run started" in err
    assert "Traceback" not in err and "torchrun: stopped by SIGINT, which the ranks were passed" in err, err[-3000:]


def test_a_second_signal_ends_a_blocked_rank_at_once(tmp_path, fault_data, fault_env):
    """Rank 1 is stopped, so rank 0 waits in a collective (its timeout far beyond the test); the first SIGTERM
    cannot reach its main thread there, the second ends it at once with the aborted run_stop."""
    log = tmp_path / "result_0.txt"
    rank0, rank1 = start_ranks(fault_descriptor(tmp_path, dist_timeout_s=600), fault_data, log, fault_env, tmp_path)
    wait_for_training((tmp_path, log.name), rank0)
    rank1.send_signal(signal.SIGSTOP)
    try:
        time.sleep(1.0)  # rank 0 is now blocked in the allreduce of a step
        rank0.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        started = time.monotonic()
        rank0.send_signal(signal.SIGTERM)
        (code,) = wait_bounded([rank0], timeout=GRACE_S)
    finally:
        rank1.kill()
        rank1.wait()
    assert code == 128 + signal.SIGTERM
    assert time.monotonic() - started < GRACE_S / 2
    assert_log_aborted(log, "a second signal (SIGTERM): ended at once")
