"""Processes as the tests need them."""

from __future__ import annotations

import subprocess


def gone_pid() -> int:
    """The pid of a process that has ended (and been reaped): what a killed run leaves in its temporaries' names."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid
