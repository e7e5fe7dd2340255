"""Typed settings from JSON (bert.typed_config): a block builds its dataclass; a missing, unknown, mistyped or
out-of-range field is one error naming the file, the field and the fix; a field's other words and the rules
across fields are checked as the block is read; the error survives a trip to a worker process."""

import pickle
from dataclasses import dataclass
from typing import Literal

import pytest

from bert.typed_config import ConfigError, Range, check_fields, choice, from_dict, ranged


@dataclass(frozen=True, kw_only=True)
class _Inner:
    rate: float = ranged(0, 1, high_open=True, default=0.5)


@dataclass(frozen=True, kw_only=True)
class _Block:
    size: int
    device: Literal["cpu", "cuda"] = choice({"gpu": "cuda"}, default="cpu")
    inner: _Inner = _Inner()
    bins: list[int] | None = None

    def problems(self) -> list[tuple[str, str]]:
        return [("bins", "must increase")] if self.bins and self.bins != sorted(self.bins) else []


def _error(data: dict) -> str:
    with pytest.raises(ConfigError) as info:
        from_dict(_Block, data, "sys.json", "run")
    return str(info.value)


def test_a_block_builds_its_dataclass_with_defaults_and_nested_blocks():
    block = from_dict(_Block, {"size": 3, "inner": {"rate": 0}, "bins": [1, 2]}, "sys.json", "run")
    assert block == _Block(size=3, inner=_Inner(rate=0.0), bins=[1, 2])
    assert isinstance(block.inner.rate, float)


@pytest.mark.parametrize("data, message", [
    ({}, "sys.json: run.size: missing; add it (an integer)"),
    ({"size": 3, "sizes": 4}, "sys.json: run.sizes: unknown field; did you mean 'size'?"),
    ({"size": "3"}, "sys.json: run.size: expected an integer, got '3' (string); write the number without quotes"),
    ({"size": True}, "sys.json: run.size: expected an integer, got True (boolean)"),
    ({"size": 3, "device": "gpu"}, "sys.json: run.device: expected one of 'cpu', 'cuda', got 'gpu' (string); did you "
                                   "mean 'cuda'?"),
    ({"size": 3, "inner": {"rate": 1}}, "sys.json: run.inner.rate: must be 0 or more and less than 1, got 1.0"),
    ({"size": 3, "bins": [1, "x"]}, "sys.json: run.bins[1]: expected an integer, got 'x' (string); write the number "
                                    "without quotes"),
    ({"size": 3, "bins": [2, 1]}, "sys.json: run.bins: must increase"),
])
def test_a_bad_field_is_one_error_naming_the_file_the_field_and_the_fix(data, message):
    assert _error(data) == message


def test_ranges_say_their_bounds_in_words_and_refuse_what_is_not_finite():
    assert Range(0, 64).bounds() == "0 or more and at most 64" and Range(0, low_open=True).bounds() == "positive"
    assert Range(1, note="at least one step")(0) == "must be at least 1, got 0 (at least one step)"
    assert Range()(float("nan")) == "must be a finite number, got nan" and Range(0, 1)(0.5) is None


def test_a_block_built_in_code_is_checked_as_json_is():
    check_fields(_Inner(rate=0.2), "a search trial")
    with pytest.raises(ConfigError, match="a search trial: rate: must be 0 or more and less than 1, got 2"):
        check_fields(_Inner(rate=2), "a search trial")


def test_the_error_pickles_whole():
    error = ConfigError("sys.json", "run.size", "missing")
    again = pickle.loads(pickle.dumps(error))
    assert (again.where, again.field, again.problem, str(again)) == ("sys.json", "run.size", "missing",
                                                                     "sys.json: run.size: missing")


def test_an_integer_of_hundreds_of_digits_is_one_error_quoting_its_first_digits():
    """An int too large for a float raised OverflowError out of the range check (math.isfinite) and the float
    conversion, and the error would have quoted all of its digits."""
    shown = "10000000000000000000... (an integer of 401 digits)"
    assert _error({"size": 10**400, "inner": {"rate": 10**400}}) == (f"sys.json: run.inner.rate: {shown} is beyond "
                                                                     "any number a float holds")
    assert Range(0, 64)(10**400) == f"must be 0 or more and at most 64, got {shown}"
    assert Range(0, 64)(-10**400) == f"must be 0 or more and at most 64, got -{shown}"
