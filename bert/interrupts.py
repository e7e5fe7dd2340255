"""SIGTERM and SIGINT during a run (a Slurm time limit, torchrun passing one on, Ctrl-C).

`SignalGuard(on_stop_at_once)`, a context manager in the main thread: the first signal raises `RunInterrupted`
(a BaseException carrying `signum`) in the main thread and is remembered (`received`; `raise_if_received()`
raises it again where the first was lost); a second signal, or a first that has not ended the run within
GRACE_S, calls `on_stop_at_once(reason)` from a watcher thread and ends the process. `exit_code(signum)` is the
process's exit status for it (128 + signum). `end_with_parent()` makes a rank (or a worker) die with its parent.
Outside a run, `signals_interrupt()` makes both signals a KeyboardInterrupt (work that cleans up after itself
then ends as after Ctrl-C) and `signals_deferred()` holds them over a step that must not be cut in two.
Why a BaseException, a watcher thread and the parent's death signal: docs/faults.md, "Signals".
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

SIGNALS = (signal.SIGTERM, signal.SIGINT)
GRACE_S = 10.0  # how long the main thread has to end the run after a first signal


class RunInterrupted(BaseException):
    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"{signal.Signals(signum).name} received (a time limit, the launcher or Ctrl-C); a second "
                         "signal ends the run at once")


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def end_with_parent(signum: int = signal.SIGKILL) -> None:
    """From now on this process gets `signum` when its parent ends (Linux; elsewhere nothing). The kernel sends it
    when the parent's thread that started this process ends: torchrun's agent and slurmstepd start ranks from
    their main thread. Called first thing, before the seconds of torch's import."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    if ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0) != 0:
        return
    if os.getppid() != parent:  # it ended while the death signal was being armed
        os.kill(os.getpid(), signum)


def exit_code(signum: int) -> int:
    """The shell's convention for a process ended by a signal."""
    return 128 + signum


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """Within it (in the main thread), SIGTERM and SIGINT raise KeyboardInterrupt, whatever this process
    inherited: a process started with `&` from a script inherits SIGINT ignored, and work between runs (an hpo
    study between its trials) would go on past a Ctrl-C. A SignalGuard inside it takes over for its run."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = {signum: signal.signal(signum, interrupt) for signum in SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Within it (in the main thread), SIGTERM and SIGINT wait: the first that came is delivered when it ends, to
    the handlers that were there before (raising KeyboardInterrupt inside signals_interrupt, else ending the
    process), so that a step that must not be cut in two (a folder swapped for another) finishes first."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {signum: signal.signal(signum, lambda signum, frame: received.append(signum)) for signum in SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if received:
            signal.raise_signal(received[0])


class SignalGuard:
    """Context manager: installs the handlers (in the main thread only; elsewhere it does nothing)."""

    def __init__(self, on_stop_at_once: Callable[[str], None]):
        self.on_stop_at_once = on_stop_at_once
        self.armed = False
        self.received: int | None = None  # the first signal, once one came
        self._ending = False  # the run is ending (disarmed): a signal needs raising no more
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
        self._ending = True

    def __exit__(self, *exc: object) -> None:
        if not self._active:
            return
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(self._previous_fd)
        self._pipe[1].close()  # the watcher's recv returns empty and it ends
        self._active = False

    def raise_if_received(self) -> None:
        """Raises RunInterrupted for a signal whose exception was lost on the way (see the module's description)."""
        if self.received is not None and not self._ending:
            self.armed = False
            raise RunInterrupted(self.received)

    def _raise_first(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum
        if self.armed:
            self.armed = False
            raise RunInterrupted(signum)

    def _watch(self, reader: socket.socket) -> None:
        first: int | None = None
        with reader:
            while True:
                reader.settimeout(None if first is None else GRACE_S)
                try:
                    data = reader.recv(64)
                except TimeoutError:
                    self._stop_at_once(first, f"the run did not end within {GRACE_S:.0f} s of "
                                              f"{signal.Signals(first).name} (blocked, e.g. in a collective "
                                              "waiting for a hung rank): ended at once")
                if not data:
                    return
                for signum in (s for s in data if s in SIGNALS):
                    if first is not None:
                        self._stop_at_once(signum, f"a second signal ({signal.Signals(signum).name}): ended at once")
                    first = signum

    def _stop_at_once(self, signum: int, why: str) -> None:
        self.on_stop_at_once(f"RunInterrupted: {why}")
        os._exit(exit_code(signum))
