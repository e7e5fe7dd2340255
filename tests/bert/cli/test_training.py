"""`mlperf-bert train` (bert.cli.training): the fault-injection variable the tests set is read as a step number or
refused in one line; a bad descriptor is one line before anything runs (tests/bert/test_train.py), and the
injected fault itself is tested through run_and_time.sh (tests/faults/test_numeric_faults.py)."""

import click
import pytest

from bert.cli.training import NAN_INJECTION_ENV, _nan_injection_step


def test_the_injected_step_is_a_step_number_or_unset(monkeypatch):
    monkeypatch.delenv(NAN_INJECTION_ENV, raising=False)
    assert _nan_injection_step() is None
    monkeypatch.setenv(NAN_INJECTION_ENV, "3")
    assert _nan_injection_step() == 3
    for bad in ("soon", "0", "-2", "3.5"):
        monkeypatch.setenv(NAN_INJECTION_ENV, bad)
        with pytest.raises(click.UsageError, match=f"{NAN_INJECTION_ENV}='{bad}': must be a step number"):
            _nan_injection_step()
