"""Spawning gloo ranks inside a test: `spawn_ranks(fn, world_size, *args)` runs fn(rank, world_size, *args)
in each of `world_size` fresh processes joined into one gloo process group (benchmarks.common.ranks), and fails
the test with the rank's traceback when one raises, or when they run past the timeout."""

from __future__ import annotations

from datetime import timedelta

import pytest

from benchmarks.common.ranks import run_ranks
from tests.helpers.repo import REPO


@pytest.fixture
def spawn_ranks(monkeypatch):
    # The spawned processes unpickle test functions by module name (tests.bert...): they need the repository
    # on their path, which they copy from this process.
    monkeypatch.syspath_prepend(str(REPO))

    def run(fn, world_size: int, *args, timeout: float = 90.0) -> None:
        try:
            run_ranks(fn, world_size, *args, timeout=timedelta(seconds=30), within_s=timeout)
        except TimeoutError as e:
            pytest.fail(str(e))

    return run
