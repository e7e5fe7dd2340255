"""The fixtures of the fault-injection tests (tests/helpers/faults.py has what the cases share)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.datasets import copy_dataset


@pytest.fixture
def fault_env(cpu_env) -> dict:
    # torchrun waits this long for the other ranks to end after one failed before it kills them (30 s by
    # default), which is what ends a rank stopped by SIGSTOP.
    return dict(cpu_env, TORCH_ELASTIC_SHUTDOWN_TIMEOUT="3", PYTHONUNBUFFERED="1")


@pytest.fixture
def fault_data(tmp_path, small_dataset) -> Path:
    return copy_dataset(small_dataset, tmp_path / "data")
