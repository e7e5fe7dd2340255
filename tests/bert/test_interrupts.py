"""bert.interrupts.end_with_parent: a rank whose launcher is killed (a node's torchrun agent, SIGKILLed or killed
for memory) ends too, instead of living on in its own session and holding the other nodes' ranks."""

import signal
import subprocess
import sys
import time

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
