"""Spreading data work over processes (bert.prep.worker_pool). The in-process path and a SIGTERM to the parent of
spawned workers are tested here; the workers' work runs in tests/bert/prep/test_prepare.py (same bytes with any
worker count, a worker's error)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bert.prep.worker_pool import run_parallel
from tests.helpers.faults import alive, descendants
from tests.helpers.repo import REPO


def _square(item: int, report) -> int:
    report(1)
    if item < 0:
        raise ValueError(f"item {item} is negative")
    return item * item


def test_results_come_in_the_order_of_the_items_through_keep_with_progress():
    done, kept = [], []
    results = run_parallel(_square, [3, 1, 2], 1, done.append, keep=lambda i, r: kept.append(i) or r + 1)
    assert results == [10, 2, 5] and kept == [0, 1, 2] and done == [1, 1, 1]


def test_an_error_in_an_item_is_raised_to_the_caller():
    with pytest.raises(ValueError, match="item -2 is negative"):
        run_parallel(_square, [1, -2, 3], 1, lambda amount: None)


def _spawned(pid: int) -> list[int]:
    """The processes below `pid` that multiprocessing spawned (its workers and its resource tracker)."""
    def command(p: int) -> bytes:
        try:
            return Path(f"/proc/{p}/cmdline").read_bytes()
        except OSError:
            return b""
    return [p for p in alive(descendants(pid)) if b"from multiprocessing." in command(p)]


def _semaphores_of(pids: list[int]) -> set[int]:
    """The inodes of the /dev/shm semaphores these processes have open. By inode, not by name: glibc's sem_open maps
    a file of a temporary name and then links it to the semaphore's; and by what these processes hold, not by what
    /dev/shm gained meanwhile, which other processes' semaphores come and go in."""
    inodes = set()
    for pid in pids:
        try:
            lines = Path(f"/proc/{pid}/maps").read_text().splitlines()
        except OSError:
            continue
        inodes.update(int(line.split()[4]) for line in lines if " /dev/shm/sem." in line)
    return inodes


def _still_in_shm(inodes: set[int]) -> list[str]:
    return [entry.name for entry in os.scandir("/dev/shm") if entry.inode() in inodes]


def test_sigterm_to_data_mlperf_ends_its_workers_and_frees_their_semaphores(download, tmp_path):
    """The workers of a `data mlperf` ended by SIGTERM ran on for good, holding /dev/shm semaphores and the pipes of
    their parent's output (whoever read it waited for ever)."""
    proc = subprocess.Popen([sys.executable, "-m", "bert.cli", "data", "mlperf", str(download), "--out",
                             str(tmp_path / "data"), "--workers", "2", "--quiet", "--shards", "6", "--eval-samples",
                             "40", "--max-seq-length", "128", "--max-predictions", "20"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = []
    try:
        deadline = time.monotonic() + 60
        while len(started) < 3 and time.monotonic() < deadline and proc.poll() is None:  # 2 workers and a tracker
            started = _spawned(proc.pid)
            time.sleep(0.05)
        assert len(started) == 3, "the workers did not start"
        held = _semaphores_of([proc.pid, *started])
        assert held, "it holds no semaphore to free"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)  # ends once no worker holds its pipes
        time.sleep(1)
        assert proc.returncode != 0 and "Traceback" not in err, err[-3000:]
        assert alive(started) == [] and _still_in_shm(held) == []
    finally:
        proc.kill()
        for pid in alive(started):
            os.kill(pid, signal.SIGKILL)


# A SIGTERM that comes just as a worker has started, before the pool holds it (its parent sends it to itself there).
SIGNALLED_WHILE_STARTING = """
import os, signal, sys, time
import multiprocessing.context
from bert.prep.worker_pool import run_parallel

def slow(item, report):
    time.sleep(60)

def start_then_signal(process, start=multiprocessing.context.SpawnProcess.start):
    start(process)
    print(process.pid, flush=True)
    os.kill(os.getpid(), signal.SIGTERM)

if __name__ == "__main__":
    multiprocessing.context.SpawnProcess.start = start_then_signal
    try:
        run_parallel(slow, [1, 2], 2, lambda amount: None)
    except KeyboardInterrupt:
        sys.exit(3)
"""


def test_a_sigterm_while_the_workers_start_ends_them_at_once(tmp_path):
    """A signal while the pool was starting its workers came outside the part that ends them: the parent waited for
    their work, or left a worker reading semaphores that it had removed."""
    script = tmp_path / "signalled.py"
    script.write_text(SIGNALLED_WHILE_STARTING)
    begun = time.monotonic()
    done = subprocess.run([sys.executable, str(script)], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert time.monotonic() - begun < 30  # the work takes a minute
    time.sleep(1)
    assert alive([int(pid) for pid in done.stdout.split()]) == []


# A SIGTERM while the pool waits for its workers to end, one of them still starting (slow to import its parent's
# main module: it is not the first worker) after the other did all the work.
SIGNALLED_WHILE_ENDING = """
import os, signal, sys, time
from concurrent.futures import ProcessPoolExecutor
from bert.prep.worker_pool import run_parallel

if __name__ == "__mp_main__":
    try:
        os.close(os.open(os.environ["FIRST_WORKER"], os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        time.sleep(4)

def quick(item, report):
    return item

def signal_then_shut_down(pool, *args, shutdown=ProcessPoolExecutor.shutdown, **kwargs):
    if not os.environ.pop("SIGNALLED", None):
        os.environ["SIGNALLED"] = "1"
        print(*[p.pid for p in pool._processes.values()], flush=True)
        os.kill(os.getpid(), signal.SIGTERM)
    shutdown(pool, *args, **kwargs)

if __name__ == "__main__":
    ProcessPoolExecutor.shutdown = signal_then_shut_down
    try:
        run_parallel(quick, [1, 2], 2, lambda amount: None)
    except KeyboardInterrupt:
        sys.exit(3)
"""


def test_a_sigterm_while_a_worker_still_starts_after_the_work_is_done_ends_it(tmp_path):
    """The wait for the pool's end came outside the part that ends the workers: a signal there left a worker that was
    still starting, and it read the semaphores that its parent, gone, had removed (a traceback, seen once in a loaded
    suite run)."""
    script = tmp_path / "ending.py"
    script.write_text(SIGNALLED_WHILE_ENDING)
    done = subprocess.run([sys.executable, str(script)], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO), "FIRST_WORKER": str(tmp_path / "first")})
    assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr[-3000:]
    time.sleep(1)
    assert len(done.stdout.split()) == 2 and alive([int(pid) for pid in done.stdout.split()]) == []
