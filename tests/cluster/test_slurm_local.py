"""tests/cluster/slurm_local.sh install: it waits while another apt holds apt's locks (a second test suite's
install on the same fresh machine, unattended-upgrades) instead of failing the Slurm tests."""

import os
import shutil
import subprocess
import sys
import time

import pytest

from tests.cluster.slurm import INSTALL_TIMEOUT_S, SCRIPT, TOOLS

APT_LOCKS = ("/var/lib/apt/lists/lock", "/var/lib/dpkg/lock-frontend")
HOLD_S = 4.0

# Another apt's hold on its locks, as apt takes them (fcntl record locks on the lock files).
HOLDER = """
import fcntl, os, sys, time
for path in sys.argv[2:]:
    fcntl.lockf(os.open(path, os.O_RDWR), fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(float(sys.argv[1]))
"""


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("apt-get") is None,
                    reason="installing Slurm needs root and apt-get")
def test_install_waits_for_another_apt_instead_of_failing():
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(HOLD_S), *APT_LOCKS],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        start = time.monotonic()
        done = subprocess.run([str(SCRIPT), "install"], capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        waited = time.monotonic() - start
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert waited > HOLD_S - 1
    assert all(shutil.which(tool) for tool in TOOLS)
