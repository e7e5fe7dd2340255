"""Build typed dataclasses from JSON-like dicts, with errors that name the field, the problem and the fix.

Supports fields of type int, float, str, bool, Optional[...], Literal[...], list[...], dict[str, ...] and
nested dataclasses. A field without a default is required; an unknown field is an error (with the closest
valid name suggested), so that a typo never silently falls back to a default. A field declared with `ranged`
or `checked` (beside the dataclass it belongs to) has its value checked here too, so that every value a
dataclass is built with is valid before anything computes with it.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, Union

T = TypeVar("T")
CHECK = "check"  # field metadata key: a callable that returns what is wrong with a value, or None
MEANS = "means"  # field metadata key: other words users write for a choice, word -> the choice they mean
RULES = "problems"  # a settings class's own method: its rules across its own fields, as [(field, problem)]


class ConfigError(ValueError):
    """One bad field: `where` is the file, `field` the dotted path to it."""

    def __init__(self, where: str, field: str, problem: str):
        self.where, self.field, self.problem = where, field, problem
        super().__init__(f"{where}: {field}: {problem}" if field else f"{where}: {problem}")

    def __reduce__(self):  # picklable, so that an error in a worker process reaches its parent whole
        return type(self), (self.where, self.field, self.problem)


@dataclass(frozen=True)
class Range:
    """The values a numeric field may take: finite, between `low` and `high` (None: no bound), each bound
    included unless it is open. `note` says why, where the bound is not obvious."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    note: str = ""

    def bounds(self) -> str:
        """The values allowed, in words ("0 or more and at most 64")."""
        parts = []
        if self.low is not None:
            if self.low == 0:
                parts.append("positive" if self.low_open else "0 or more")
            else:
                parts.append(f"greater than {_number(self.low)}" if self.low_open else f"at least {_number(self.low)}")
        if self.high is not None:
            parts.append(f"less than {_number(self.high)}" if self.high_open else f"at most {_number(self.high)}")
        return " and ".join(parts) or "a finite number"

    def __call__(self, value: float) -> str | None:
        below = self.low is not None and (value <= self.low if self.low_open else value < self.low)
        above = self.high is not None and (value >= self.high if self.high_open else value > self.high)
        finite = isinstance(value, int) or math.isfinite(value)  # an int of 400 digits is no float (OverflowError)
        if finite and not below and not above:
            return None
        return f"must be {self.bounds()}, got {_shown(value)}" + (f" ({self.note})" if self.note else "")


MAX_SHOWN_DIGITS = 20


def _shown(value: Any) -> str:
    """`value` as an error message quotes it: an integer of hundreds of digits by its first digits and its length."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**MAX_SHOWN_DIGITS:
        digits = str(abs(value))
        return f"{'-' if value < 0 else ''}{digits[:MAX_SHOWN_DIGITS]}... (an integer of {len(digits):,} digits)"
    return repr(value)


def _number(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else f"{bound:g}"


def checked(check: Callable[[Any], str | None], **field_args: Any) -> Any:
    """A dataclass field whose values `check` accepts (it returns None) or rejects (it returns the problem)."""
    return dataclasses.field(metadata={CHECK: check}, **field_args)


def ranged(low: float | None = None, high: float | None = None, *, low_open: bool = False,
           high_open: bool = False, note: str = "", **field_args: Any) -> Any:
    """A numeric dataclass field with its Range; `field_args` are dataclasses.field's (default, ...)."""
    return checked(Range(low, high, low_open, high_open, note), **field_args)


def choice(means: dict[str, str], **field_args: Any) -> Any:
    """A Literal field that knows what other words users write for its choices (`"gpu"` for `"cuda"`), so that the
    error for one suggests the choice meant rather than the nearest spelling."""
    return dataclasses.field(metadata={MEANS: means}, **field_args)


def type_name(tp: Any) -> str:
    """The type of a field in words ("an integer", "one of 'lamb', 'adam'", "a number or null")."""
    origin = typing.get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(type_name(a) for a in typing.get_args(tp))
    if origin is list:
        return f"a list of {type_name(typing.get_args(tp)[0])}"
    if origin is dict:
        return f"an object of {type_name(typing.get_args(tp)[1])}"
    if dataclasses.is_dataclass(tp):
        return "an object"
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false",
            type(None): "null"}.get(tp, str(tp))


def _describe(value: Any) -> str:
    kind = {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "object",
            type(None): "null"}.get(type(value), type(value).__name__)
    return f"{_shown(value)} ({kind})" if not isinstance(value, (dict, list)) else kind


def _convert(tp: Any, value: Any, where: str, field: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        options = [option for option in typing.get_args(tp) if option is not type(None)]
        if value is not None and len(options) == 1:  # Optional[X]: X's own error names the inner field
            return _convert(options[0], value, where, field)
        errors = []
        for option in typing.get_args(tp):
            try:
                return _convert(option, value, where, field)
            except ConfigError as e:
                errors.append(e)
        raise ConfigError(where, field, f"expected {type_name(tp)}, got {_describe(value)}")
    if origin is Literal:
        if value in typing.get_args(tp):
            return value
        close = difflib.get_close_matches(str(value), [str(a) for a in typing.get_args(tp)], n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(where, field, f"expected {type_name(tp)}, got {_describe(value)}{hint}")
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(where, field, f"expected {type_name(tp)}, got {_describe(value)}")
        (item,) = typing.get_args(tp)
        return [_convert(item, v, where, f"{field}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(where, field, f"expected {type_name(tp)}, got {_describe(value)}")
        _, item = typing.get_args(tp)
        return {k: _convert(item, v, where, f"{field}.{k}") for k, v in value.items()}
    if dataclasses.is_dataclass(tp):
        return from_dict(tp, value, where, field)
    if tp is type(None):
        if value is None:
            return None
    elif tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                return float(value)
            except OverflowError:
                raise ConfigError(where, field, f"{_shown(value)} is beyond any number a float holds") from None
    elif tp is str:
        if isinstance(value, str):
            return value
    hint = ""
    if isinstance(value, str) and tp in (int, float):
        hint = "; write the number without quotes"
    elif tp is str and isinstance(value, (int, float)):
        hint = f'; write it in quotes, as "{value}"'
    raise ConfigError(where, field, f"expected {type_name(tp)}, got {_describe(value)}{hint}")


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    """The field types of a dataclass, evaluated once: a descriptor builds dozens of dataclasses, and `system list`
    of thousands spent most of its time evaluating the same annotations again."""
    return typing.get_type_hints(cls)


def from_dict(cls: type[T], data: Any, where: str, prefix: str = "") -> T:
    """Builds dataclass `cls` from `data`; raises ConfigError for the first bad field."""
    if not isinstance(data, dict):
        raise ConfigError(where, prefix, f"expected an object, got {_describe(data)}")
    hints = _type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    for key in data:
        if key not in fields:
            close = difflib.get_close_matches(key, list(fields), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; valid fields: {', '.join(fields)}"
            raise ConfigError(where, f"{prefix}.{key}".lstrip("."), f"unknown field{hint}")
    kwargs = {}
    for name, f in fields.items():
        path = f"{prefix}.{name}".lstrip(".")
        if name in data:
            kwargs[name] = _checked_value(f, hints[name], data[name], where, path)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ConfigError(where, path, f"missing; add it ({type_name(hints[name])})")
    built = cls(**kwargs)
    for name, problem in rule_problems(built):
        raise ConfigError(where, f"{prefix}.{name}".lstrip("."), problem)
    return built


def rule_problems(settings: Any) -> list[tuple[str, str]]:
    """What the rules across a settings dataclass's fields find wrong, as (field, problem): the `problems` method
    of each class it is made of (a run block composed of several components' settings runs each one's rules)."""
    found = []
    for cls in type(settings).__mro__:
        rules = vars(cls).get(RULES)
        if rules is not None:
            found += rules(settings)
    return found


def check_fields(obj: Any, where: str) -> None:
    """Checks a dataclass built in code (not read by from_dict) the way from_dict checks JSON: every field's type
    and its declared check (`ranged`, `checked`); raises ConfigError for the first bad field."""
    hints = _type_hints(type(obj))
    for f in dataclasses.fields(obj):
        _checked_value(f, hints[f.name], getattr(obj, f.name), where, f.name)


def _checked_value(f: dataclasses.Field, tp: Any, value: Any, where: str, path: str) -> Any:
    """`value` converted to the field's type `tp` and passed through the field's declared check."""
    meant = f.metadata.get(MEANS, {}).get(value) if isinstance(value, str) else None
    if meant is not None:
        raise ConfigError(where, path, f"expected {type_name(tp)}, got {_describe(value)}; did you mean {meant!r}?")
    value = _convert(tp, value, where, path)
    check = f.metadata.get(CHECK)
    problem = check(value) if check is not None and value is not None else None
    if problem:
        raise ConfigError(where, path, problem)
    return value
