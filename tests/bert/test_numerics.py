"""The numeric guard's bookkeeping (bert.numerics): the first step of each fault, consecutive fp16 overflows
beyond the limit, a clean run; the injected fault through run_and_time.sh is in tests/faults/test_numeric_faults.py."""

import math

import pytest
import torch

from bert.distributed.launch import DistContext
from bert.numerics import NumericalFault, NumericGuard

CPU = DistContext(0, 1, 0, 1, torch.device("cpu"))


def _observe(guard: NumericGuard, loss: float, norm: float | None = 1.0, scale=(1.0, 1.0)) -> None:
    guard.observe(torch.tensor(loss), None if norm is None else torch.tensor(norm), *map(torch.tensor, scale))


def test_the_first_non_finite_loss_is_the_one_named():
    guard = NumericGuard(torch.device("cpu"), loss_scaling=False, overflow_limit=3)
    for loss in (2.0, 1.5, math.inf, math.nan):
        _observe(guard, loss)
    with pytest.raises(NumericalFault, match="non-finite loss at step 3"):
        guard.check(CPU)


def test_a_non_finite_gradient_is_named_when_the_loss_is_finite():
    guard = NumericGuard(torch.device("cpu"), loss_scaling=False, overflow_limit=3)
    _observe(guard, 2.0)
    _observe(guard, 2.0, norm=math.nan)
    with pytest.raises(NumericalFault, match="non-finite gradient at step 2"):
        guard.check(CPU)


def test_fp16_overflows_are_a_fault_only_beyond_the_limit():
    guard = NumericGuard(torch.device("cpu"), loss_scaling=True, overflow_limit=3)
    for _ in range(3):  # three overflows in a row, then a good step: loss scaling at work
        _observe(guard, math.nan, norm=math.inf, scale=(4.0, 2.0))
    _observe(guard, 1.0, scale=(2.0, 2.0))
    guard.check(CPU)
    for _ in range(4):
        _observe(guard, math.inf, norm=math.inf, scale=(2.0, 1.0))
    with pytest.raises(NumericalFault, match="4 consecutive fp16 loss-scale overflows ending at step 8"):
        guard.check(CPU)


def test_a_clean_run_passes_the_check():
    guard = NumericGuard(torch.device("cpu"), loss_scaling=False, overflow_limit=3)
    for _ in range(5):
        _observe(guard, 1.0)
    guard.check(CPU)
