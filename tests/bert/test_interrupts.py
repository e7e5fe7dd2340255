"""bert.interrupts: a rank whose launcher is killed (a node's torchrun agent, SIGKILLed or killed for memory)
ends too, instead of living on in its own session and holding the other nodes' ranks; a signal ends the run
before the clock starts even when its exception was lost or a library caught it."""

import os
import signal
import subprocess
import sys
import time

import pytest

from bert.interrupts import RunInterrupted, SignalGuard, exit_code, signals_deferred, signals_interrupt
from tests.helpers.faults import alive

_RANK = ("import time; from bert.interrupts import end_with_parent; end_with_parent(); print('armed', flush=True); "
         "time.sleep(60)")
# The launcher starts the rank in a session of its own, as torchrun does, and waits.
_LAUNCHER = f"""
import subprocess, sys
rank = subprocess.Popen([sys.executable, "-c", {_RANK!r}], start_new_session=True)
print(rank.pid, flush=True)
rank.wait()
"""


def test_a_rank_ends_when_its_launcher_is_killed():
    launcher = subprocess.Popen([sys.executable, "-c", _LAUNCHER], stdout=subprocess.PIPE, text=True)
    rank = int(launcher.stdout.readline())
    assert launcher.stdout.readline() == "armed\n"
    launcher.send_signal(signal.SIGKILL)
    launcher.wait()
    deadline = time.monotonic() + 10
    while alive([rank]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive([rank]), f"rank {rank} outlived its launcher"


class _SignalledWhileFinalized:
    """Gets SIGTERM while the interpreter finalizes it, where a signal handler's exception is lost ("Exception
    ignored in ..."): torch.compile's warm-up runs many finalizers and weakref callbacks."""

    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # the handler runs here, inside the finalizer


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the lost exception, as expected
def test_a_signal_whose_exception_was_lost_still_ends_the_run_before_the_clock():
    with SignalGuard(on_stop_at_once=lambda reason: None) as guard:
        _SignalledWhileFinalized()  # dropped at once: the signal comes and its exception is lost
        assert guard.received == signal.SIGTERM
        with pytest.raises(RunInterrupted, match="SIGTERM received"):
            guard.raise_if_received()  # what the run asks before run_start and at every step


def test_a_librarys_except_exception_does_not_take_the_signal_for_its_own_error():
    with SignalGuard(on_stop_at_once=lambda reason: None):
        with pytest.raises(RunInterrupted) as raised:
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)
            except Exception:  # noqa: BLE001 - as a compiler's fallback path does
                pass
    assert exit_code(raised.value.signum) == 130


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_interrupts_the_work_between_runs_even_where_it_was_ignored(signum):
    before = signal.signal(signum, signal.SIG_IGN)  # as a process started with & from a script inherits SIGINT
    try:
        with pytest.raises(KeyboardInterrupt, match=signal.Signals(signum).name), signals_interrupt():
            os.kill(os.getpid(), signum)
            time.sleep(5)  # the handler runs at the next bytecode; never reached
        assert signal.getsignal(signum) is signal.SIG_IGN  # put back as it was
    finally:
        signal.signal(signum, before)


def test_a_signal_during_a_deferred_step_comes_when_the_step_is_done():
    """A folder swapped for another (compliance.output_folder) is never cut in two: the signal that came meanwhile is
    delivered after, as the handlers before took it (here: KeyboardInterrupt)."""
    done = []
    with pytest.raises(KeyboardInterrupt, match="SIGTERM"), signals_interrupt():
        with signals_deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)
            done.append("the step")
        done.append("after it")
    assert done == ["the step"]
