"""benchmarks.common.ranks: a rank that C++ ends with SIGABRT (as std::terminate does) leaves the Python stacks
of its threads on stderr, not only the signal's name that torch's spawn reports."""

from __future__ import annotations

import os
import time
from datetime import timedelta

import pytest
from torch.multiprocessing import ProcessExitedException

from benchmarks.common.ranks import run_ranks


def aborting_rank_in_its_own_frame(rank: int, world_size: int) -> None:
    if rank == 1:
        os.abort()
    time.sleep(60)  # rank 0 outlives it: its end, not rank 0's lost connection, is what spawn reports


def test_a_rank_aborted_from_below_python_names_its_frame(capfd):
    with pytest.raises(ProcessExitedException, match="process 1 terminated with signal SIGABRT"):
        run_ranks(aborting_rank_in_its_own_frame, 2, timeout=timedelta(seconds=5), within_s=120)
    err = capfd.readouterr().err
    assert "Fatal Python error: Aborted" in err and "aborting_rank_in_its_own_frame" in err, err[-2000:]
