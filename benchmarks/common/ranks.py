"""Ranks on this host: a free port for their rendezvous, one process joined into a process group, and a
function run on several spawned ranks (gloo, one process each). The benchmarks, the acceptance check and the
tests start their ranks here."""

from __future__ import annotations

import contextlib
import faulthandler
import os
import socket
import time
from collections.abc import Callable, Iterator
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

HOST = "127.0.0.1"


def free_port() -> int:
    """A port nothing listens on now (the operating system's pick; another process may still take it first)."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def process_group(rank: int, world_size: int, port: int, timeout: timedelta, backend: str = "gloo",
                  threads: int | None = 1, device_id: torch.device | None = None) -> Iterator[None]:
    """This process as `rank` of a group of `world_size` on this host, its torch threads set to `threads` (None:
    left as they are). On leaving without an error every rank waits for the others before the group is
    destroyed: a rank that closes its connections while another still finishes a collective with it can abort
    that one."""
    os.environ.update(MASTER_ADDR=HOST, MASTER_PORT=str(port))
    if threads is not None:
        torch.set_num_threads(threads)
    dist.init_process_group(backend, rank=rank, world_size=world_size, timeout=timeout, device_id=device_id)
    try:
        yield
        dist.barrier()
    finally:
        dist.destroy_process_group()


def _rank_main(rank: int, fn: Callable, world_size: int, port: int, timeout: timedelta, threads: int,
               args: tuple) -> None:
    # A rank ended by a signal from C++ (SIGABRT from std::terminate in torch or gloo) leaves spawn only the signal's
    # name; the Python stacks of its threads, printed on the way out, say where it was.
    faulthandler.enable(all_threads=True)
    with process_group(rank, world_size, port, timeout, threads=threads):
        fn(rank, world_size, *args)


def run_ranks(fn: Callable, world_size: int, *args: object, timeout: timedelta, threads: int = 1,
              within_s: float | None = None) -> None:
    """Runs fn(rank, world_size, *args) in `world_size` fresh processes joined into one gloo group (collectives
    give up after `timeout`). A rank's error is raised here with its traceback (torch's ProcessRaisedException);
    ranks still running after `within_s` seconds are killed and TimeoutError is raised. `fn` must be importable
    by name: a module-level function (a script run with `python -m` qualifies)."""
    context = mp.start_processes(_rank_main, args=(fn, world_size, free_port(), timeout, threads, args),
                                 nprocs=world_size, join=False, start_method="spawn")
    deadline = None if within_s is None else time.monotonic() + within_s
    while not context.join(timeout=1.0):
        if deadline is not None and time.monotonic() > deadline:
            for process in context.processes:
                process.kill()
            raise TimeoutError(f"{world_size} ranks of {fn.__name__} still running after {within_s:.0f} s")


def gather_from_ranks(fn: Callable, world_size: int, *args: object, timeout: timedelta,
                      threads: int = 1) -> dict:
    """run_ranks with a dict shared by the ranks as fn's last argument; returns what they put in it."""
    with mp.Manager() as manager:
        shared = manager.dict()
        run_ranks(fn, world_size, *args, shared, timeout=timeout, threads=threads)
        return dict(shared)
