"""The search's settings: a descriptor's run.search block, the space of `mlperf-bert hpo`, which bert.search_space
checks against the run fields it names."""

from __future__ import annotations

from dataclasses import dataclass

from bert.typed_config import ranged


@dataclass(frozen=True, kw_only=True)
class SearchParam:
    """The distribution of one run field in a hyperparameter search (`mlperf-bert hpo`): a range
    (`low`..`high`, optionally on a log scale or in steps; whole numbers for integer fields) or `choices`."""

    low: float | None = ranged(default=None)
    """The range's lower end."""
    high: float | None = ranged(default=None)
    """The range's upper end."""
    log: bool = False
    """Draws the range on a log scale (low must be positive)."""
    step: float | None = ranged(0, low_open=True, default=None)
    """Draws the range in steps of this size."""
    choices: list[str | int | float] | None = None
    """The values to choose from, instead of a range."""
