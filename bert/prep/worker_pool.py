"""Offline data work spread over processes, one per core, with the workers' progress shown by the parent.

Workers are spawned, not forked: the parent runs threads (the progress display), and forking a process
with threads is unsafe. A worker reports progress through a queue, a few times a second at most.

The parent alone answers a signal: SIGTERM, like Ctrl-C (which the workers ignore), ends the work in the parent,
which ends its workers at once (a part takes minutes) and raises KeyboardInterrupt. A worker whose parent died
anyway (SIGKILL) gets SIGKILL: workers left behind held the queue's semaphores in /dev/shm, and their parent's
pipes, for good.
"""

from __future__ import annotations

import multiprocessing
import signal
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from queue import Empty
from typing import Any

from bert.interrupts import end_with_parent, signals_deferred, signals_interrupt
from bert.prep.progress import Advance

Task = Callable[[Any, Advance], Any]  # (item, report progress) -> result; must be picklable for workers


def run_parallel(task: Task, items: Sequence, workers: int, advance: Advance,
                 keep: Callable[[int, Any], Any] | None = None) -> list:
    """task(item, report) for every item, results in the order of `items`. With one worker (or one item) it
    runs in this process. Each result passes through keep(index, result) as it arrives, when given, and what
    that returns is kept: a caller folds large results into its own state instead of holding them all. On an
    error the items not started are cancelled, the running ones finish, and the error is raised here."""
    def kept(index: int, result: Any) -> Any:
        return result if keep is None else keep(index, result)

    if workers <= 1 or len(items) <= 1:
        return [kept(i, task(item, advance)) for i, item in enumerate(items)]
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    results: dict[int, Any] = {}
    with signals_interrupt():
        pool = ProcessPoolExecutor(min(workers, len(items)), mp_context=context, initializer=_init_worker,
                                   initargs=(queue,))
        try:
            _collect(pool, task, items, queue, advance, kept, results)
        except Exception:
            raise
        except BaseException:  # interrupted, perhaps while waiting for the pool to end: see _end_workers
            _end_workers(pool)
            pool.shutdown(wait=True)
            raise
    _drain(queue, advance)
    return [results[i] for i in range(len(items))]


def _collect(pool: ProcessPoolExecutor, task: Task, items: Sequence, queue, advance: Advance,
             kept: Callable[[int, Any], Any], results: dict[int, Any]) -> None:
    """Runs every item on the pool into results[index], then waits for its workers to end: that wait too is within
    the caller's `try`, since a worker may still be starting when the work is done (another did it all), and a
    parent that a signal ended there removed the semaphores that worker was about to read."""
    pending: dict = {}
    try:
        # Submitting starts the workers: a signal then would leave one started but not yet the pool's to end.
        with signals_deferred():
            pending.update((pool.submit(_in_worker, task, item), i) for i, item in enumerate(items))
        waiting = set(pending)
        while waiting:
            done, waiting = wait(waiting, timeout=0.2, return_when=FIRST_COMPLETED)
            _drain(queue, advance)
            results.update((pending[f], kept(pending[f], f.result())) for f in done)
    except Exception:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=True)  # the running items finish
        raise
    pool.shutdown(wait=True)


class _Batched:
    """Forwards progress at most every `interval` seconds."""

    def __init__(self, sink: Advance, interval: float = 0.25):
        self.sink, self.interval, self.pending, self.last = sink, interval, 0.0, time.monotonic()

    def __call__(self, amount: float) -> None:
        self.pending += amount
        if time.monotonic() - self.last >= self.interval:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.sink(self.pending)
            self.pending, self.last = 0.0, time.monotonic()


_progress_queue = None  # set in each worker process


def _end_workers(pool: ProcessPoolExecutor) -> None:
    """Ends the pool's workers now, whatever they are doing (Python 3.14's terminate_workers, where it exists):
    the running items are not waited for, and the pool marks the others broken (cancelling them too made its
    manager thread fail on Python 3.11)."""
    terminate = getattr(pool, "terminate_workers", None)
    if terminate is not None:
        terminate()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()


def _init_worker(queue) -> None:
    global _progress_queue
    _progress_queue = queue
    end_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches every process of the group: the parent decides


def _in_worker(task: Task, item: Any) -> Any:
    report = _Batched(_progress_queue.put)
    try:
        return task(item, report)
    finally:
        report.flush()


def _drain(queue, advance: Advance) -> None:
    while True:
        try:
            advance(queue.get_nowait())
        except Empty:
            return
