"""Spawning gloo ranks inside a test: `spawn_ranks(fn, world_size, *args)` runs fn(rank, world_size, *args)
in each of `world_size` fresh processes joined into one gloo process group, and fails the test with the
rank's traceback when one raises, or when they run past the timeout."""

from __future__ import annotations

import os
import time
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from tests.helpers.ports import free_port
from tests.helpers.repo import REPO


def _rank_main(rank: int, fn, world_size: int, port: int, args: tuple) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world_size, timeout=timedelta(seconds=30))
    try:
        fn(rank, world_size, *args)
        # No rank closes its connections while another may still be finishing a collective with it: once (of
        # ~300 tests on 2 loaded cores) a rank aborted in C++ with "terminate called without an active exception".
        dist.barrier()
    finally:
        dist.destroy_process_group()


@pytest.fixture
def spawn_ranks(monkeypatch):
    # The spawned processes unpickle test functions by module name (tests.bert...): they need the repository
    # on their path, which they copy from this process.
    monkeypatch.syspath_prepend(str(REPO))

    def run(fn, world_size: int, *args, timeout: float = 90.0) -> None:
        context = mp.start_processes(_rank_main, args=(fn, world_size, free_port(), args), nprocs=world_size,
                                     join=False, start_method="spawn")
        deadline = time.monotonic() + timeout
        while not context.join(timeout=1.0):
            if time.monotonic() > deadline:
                for process in context.processes:
                    process.kill()
                pytest.fail(f"{world_size} ranks of {fn.__name__} still running after {timeout:.0f} s")

    return run
