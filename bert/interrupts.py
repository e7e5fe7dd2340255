"""SIGTERM and SIGINT during a run (a Slurm time limit, torchrun passing one on, Ctrl-C).

The first signal raises RunInterrupted in the main thread, so the run ends through its ordinary error path:
an aborted run_stop with the reason, a flushed log, the process group shut down. The main thread only sees it
when it runs Python, which it may not for a while (a collective waiting for a hung rank), so a second signal
is served by a watcher thread: it calls `on_second` (which writes the aborted run_stop) and ends the process
at once. The watcher learns of signals through signal.set_wakeup_fd, which the interpreter writes to as the
signal arrives, whatever the main thread is doing.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Callable
from types import FrameType

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class RunInterrupted(Exception):
    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"{signal.Signals(signum).name} received (a time limit, the launcher or Ctrl-C); a second "
                         "signal ends the run at once")


def exit_code(signum: int) -> int:
    """The shell's convention for a process ended by a signal."""
    return 128 + signum


class SignalGuard:
    """Context manager: installs the handlers (in the main thread only; elsewhere it does nothing)."""

    def __init__(self, on_second: Callable[[str], None]):
        self.on_second = on_second
        self.armed = False
        self._active = False
        self._previous: dict[int, object] = {}
        self._previous_fd = -1
        self._pipe: tuple[socket.socket, socket.socket] | None = None

    def __enter__(self) -> SignalGuard:
        if threading.current_thread() is not threading.main_thread():
            return self
        self._pipe = socket.socketpair()
        self._pipe[1].setblocking(False)
        self._previous_fd = signal.set_wakeup_fd(self._pipe[1].fileno(), warn_on_full_buffer=False)
        for signum in SIGNALS:
            self._previous[signum] = signal.signal(signum, self._raise_first)
        self._active = self.armed = True
        threading.Thread(target=self._watch, args=(self._pipe[0],), name="signal-watcher", daemon=True).start()
        return self

    def disarm(self) -> None:
        """From now on a first signal raises nothing (the run is already ending); a second still ends it."""
        self.armed = False

    def __exit__(self, *exc: object) -> None:
        if not self._active:
            return
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(self._previous_fd)
        self._pipe[1].close()  # the watcher's recv returns empty and it ends
        self._active = False

    def _raise_first(self, signum: int, frame: FrameType | None) -> None:
        if self.armed:
            self.armed = False
            raise RunInterrupted(signum)

    def _watch(self, reader: socket.socket) -> None:
        seen = 0
        with reader:
            while data := reader.recv(64):
                for signum in data:
                    if signum not in SIGNALS:
                        continue
                    seen += 1
                    if seen >= 2:
                        name = signal.Signals(signum).name
                        self.on_second(f"RunInterrupted: a second signal ({name}): ended at once")
                        os._exit(exit_code(signum))
