"""The search space of `mlperf-bert hpo` (a descriptor's run.search): which run fields a study may vary and
the check that every value it can sample makes a valid descriptor, so that a study fails before its first
trial rather than in the middle of it. `mlperf-bert system check` and `hpo` run the check.
"""

from __future__ import annotations

import typing
from typing import Literal

from bert.search_settings import SearchParam
from bert.system import Descriptor, RunSpec
from bert.typed_config import ConfigError

# Run fields a search may vary, besides those of run.optimizer; the rest fix the benchmark or the launch.
SEARCHABLE_FIELDS = ("global_batch_size", "gradient_accumulation_steps", "clip")


def run_field_type(path: str) -> object:
    """The type of the run field at `path`, or None where there is no such field."""
    cls: object = RunSpec
    for name in path.split("."):
        hints = typing.get_type_hints(cls) if isinstance(cls, type) else {}
        if name not in hints:
            return None
        cls = hints[name]
    return cls


def _bounds(key: str, param: SearchParam) -> list[object]:
    """The values that bound one field's distribution (range ends or choices); raises ValueError with the
    problem of a distribution that does not fit its field."""
    tp = run_field_type(key)
    searchable = key in SEARCHABLE_FIELDS or key.startswith("optimizer.")
    if not searchable or tp not in (int, float) and typing.get_origin(tp) is not Literal:
        raise ValueError("not a searchable run field; search global_batch_size, gradient_accumulation_steps, clip "
                         "or a field of run.optimizer")
    if param.choices is not None:
        if param.low is not None or param.high is not None or param.log or param.step is not None:
            raise ValueError("give either choices or a range (low, high, log, step), not both")
        if not param.choices:
            raise ValueError("choices is empty; list at least one value")
        return list(param.choices)
    if tp not in (int, float):
        raise ValueError('has a fixed set of values; search it with "choices"')
    if param.low is None or param.high is None or not param.low < param.high:
        raise ValueError("a range needs low < high (or give choices)")
    if param.log and (param.low <= 0 or param.step is not None):
        raise ValueError("a log range needs low > 0 and no step")
    ends = [param.low, param.high, *([param.step] if param.step is not None else [])]
    if tp is int and any(v != int(v) for v in ends):
        raise ValueError(f"run.{key} is an integer field; low, high and step must be whole")
    return [tp(param.low), tp(param.high)]


def check_search_space(system: Descriptor) -> None:
    """Raises ConfigError naming run.search.<field> when a distribution does not fit its field, or when one of
    its bounding values (each range end, each choice; one field at a time) makes the descriptor invalid."""
    where = str(system.path)
    for key, param in system.run.search.items():
        try:
            values = _bounds(key, param)
        except ValueError as e:
            raise ConfigError(where, f"run.search.{key}", str(e)) from None
        for value in values:
            try:
                system.variant({key: value})
            except ConfigError as e:
                raise ConfigError(where, f"run.search.{key}", f"the value {value!r} makes the descriptor invalid: "
                                  f"{e.field}: {e.problem}") from None
