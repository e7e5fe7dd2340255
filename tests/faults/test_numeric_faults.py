"""Numerical faults: a NaN loss injected at a chosen step aborts the run at the next check, naming that step;
the guard's bookkeeping (first step, consecutive fp16 overflows, agreement across ranks) on its own."""

import math

import pytest
import torch

from bert.cli.training import NAN_INJECTION_ENV
from bert.distributed.launch import DistContext
from bert.numerics import NumericalFault, NumericGuard
from tests.helpers.faults import CASE_TIMEOUT_S, assert_log_aborted, fault_descriptor, finish, run_and_time

CPU = DistContext(0, 1, 0, 1, torch.device("cpu"))


def test_an_injected_nan_loss_aborts_each_run_and_run_and_time_goes_on(tmp_path, fault_data, fault_env):
    logdir = tmp_path / "logs"
    results = logdir / "faulty_micro"
    results.mkdir(parents=True)
    (results / "result_0.txt").write_text("an earlier result\n")
    proc = run_and_time(fault_descriptor(tmp_path), logdir, fault_data, fault_env, NEXP="2",
                        **{NAN_INJECTION_ENV: "3"})
    code, out, err = finish(proc, timeout=2 * CASE_TIMEOUT_S)
    assert code == 1, err[-3000:]
    assert (results / "result_0.txt").read_text() == "an earlier result\n"
    assert out.count("RESULT,bert,") == 2
    assert "2 of 2 run(s) failed: result_1.txt result_2.txt" in err
    for name in ("result_1.txt", "result_2.txt"):
        assert_log_aborted(results / name, "NumericalFault: non-finite loss at step 3")
        assert "eval_accuracy" not in (results / name).read_text()  # caught at step 4's check, before an eval


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
