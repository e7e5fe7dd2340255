"""One worker process for the whole session runs the fake-CUDA scenarios (fake_cuda.install changes a process
for good, so never this one); `fake_cuda_run(fn, *args)` runs fn there and returns its result."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import pytest

from tests.cuda_path import fake_cuda


@pytest.fixture(scope="session")
def fake_cuda_run():
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=fake_cuda.install) as worker:
        yield lambda fn, *args: worker.submit(fn, *args).result(timeout=300)
