"""Tables of kinds: a descriptor field that names one of a few kinds (run.optimizer.name, run.clip) is read as a
Literal, and everything the harness does with the choice is an attribute of its kind, in one table per field
(bert.optim.kinds, bert.distributed.clip_kinds), as bert.data.balance does for run.balance.

`kind_table` builds such a table and checks it against the Literal at import, so that a name the descriptor's
reader accepts always has its kind. `deferred` names a function of a module that needs torch, imported when it is
called: the descriptor and the log read the tables without torch (`mlperf-bert log seal`, on a run's failure
path, must not wait for it).
"""

from __future__ import annotations

import importlib
import typing
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar


class Kind(Protocol):
    name: str


K = TypeVar("K", bound=Kind)


def kind_table(literal: Any, kinds: Sequence[K], where: str) -> dict[str, K]:
    """The kinds by name, checked against the Literal the field is read with: every value the reader accepts has
    its kind and every kind is a value it accepts, in the Literal's order (the one errors and the field table
    show). Raises TypeError naming `where` and both lists otherwise."""
    listed = [kind.name for kind in kinds]
    names = list(typing.get_args(literal))
    if listed != names:
        raise TypeError(f"{where}: the kinds {listed} are not the Literal's values {names}: give each value of the "
                        "Literal one entry of the table, in the same order")
    return {kind.name: kind for kind in kinds}


def kinds_where(table: dict[str, K], has: Callable[[K], bool]) -> list[K]:
    """The kinds of `table` that `has` holds for (the closed division's, the reference's), in the table's order."""
    return [kind for kind in table.values() if has(kind)]


def deferred(module: str, name: str) -> Callable[..., Any]:
    """The function `name` of `module`, imported when it is first called."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__qualname__ = call.__name__ = f"{module}.{name}"
    return call
