"""What a training run prints on rank 0's console (the MLPerf lines go to the result file, bert.mllog).

After each eval, one line: the samples trained, the masked-LM accuracy against the target, the time since
run_start and an estimate of the time left. On a terminal the same line, without the accuracy's news, is also
kept up to date in place at every print interval. Verbose (`mlperf-bert train --verbose`, MLPERF_BERT_VERBOSE=1)
adds each print interval's loss, learning rate and rates as lines of their own, and no line in place.

The time left is the samples still to train times the seconds per sample so far (evals included). The samples
at which the run will stop are run.performance.samples_to_converge while the run is short of them (a measured
run's figure: the accuracy of a small model can rise slowly for long, then fast, which no trend foresees), else
those at which the trend of the last evals (TREND_EVALS of them) reaches the target, else the sample cap
run.max_samples bounds them ("at most").
"""

from __future__ import annotations

import math
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from bert.system import Descriptor

# How the samples at which the run ends were judged (RunEnd.how).
TREND, DECLARED, CAP = "trend", "declared", "cap"
# The evals whose trend (first to last) judges the end: more than two, so that one eval's noise (an accuracy a
# little below the one before) does not hide the run's course.
TREND_EVALS = 3


@dataclass(frozen=True)
class Goal:
    """What ends a run: the target accuracy, checked every `interval` samples, at most `cap` samples."""

    target: float
    interval: int
    cap: int
    declared: int | None = None  # run.performance.samples_to_converge: the samples a run of the system takes

    @classmethod
    def of(cls, system: Descriptor) -> Goal:
        performance = system.run.performance
        return cls(system.run.eval.target_accuracy, system.eval_interval_samples, system.run.max_samples,
                   performance.samples_to_converge if performance is not None else None)

    def eval_at_or_after(self, samples: float) -> int:
        """The samples of the first eval at or after `samples`, the cap's eval at most."""
        return min(self.cap, math.ceil(round(samples / self.interval, 6)) * self.interval)  # no float's 1e-16 over


@dataclass(frozen=True)
class RunEnd:
    samples: int  # the samples at which the run is expected to stop
    how: str  # TREND, DECLARED or CAP


def expected_end(goal: Goal, evals: list[tuple[int, float]]) -> RunEnd:
    """The samples at which a run with these (samples, accuracy) evals is expected to stop, and how that was
    judged: the declared samples to converge while the run is short of them, else the last evals' trend when
    the accuracy rose over them, else the cap."""
    done = evals[-1][0] if evals else 0
    after = goal.eval_at_or_after(done + 1)
    if goal.declared is not None and goal.declared > done:
        return RunEnd(max(after, goal.eval_at_or_after(goal.declared)), DECLARED)
    if len(evals) >= 2:
        (before, was), (now, accuracy) = evals[-min(len(evals), TREND_EVALS)], evals[-1]
        if accuracy > was and now > before:
            reach = now + (goal.target - accuracy) * (now - before) / (accuracy - was)
            return RunEnd(max(after, goal.eval_at_or_after(reach)), TREND)
    return RunEnd(goal.cap, CAP)


def duration(seconds: float) -> str:
    """A span of time as a person reads it: 42 s, 3 min 05 s, 1 h 07 min."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def time_left(goal: Goal, evals: list[tuple[int, float]], samples: int, seconds: float) -> str:
    """The estimate of the time left after `samples` samples trained in `seconds` since run_start."""
    if samples <= 0 or seconds <= 0:
        return "time left not known yet"
    end = expected_end(goal, evals)
    left = duration(max(0, end.samples - samples) * seconds / samples)
    if end.how == CAP:
        return f"at most {left} left (the sample cap)"
    return f"about {left} left"


@dataclass
class RunConsole:
    """Rank 0's console during the timed run. `enabled` False (the other ranks) prints nothing."""

    goal: Goal
    enabled: bool = True
    verbose: bool = False
    stream: TextIO = field(default_factory=lambda: sys.stdout)
    clock: Callable[[], float] = time.perf_counter
    live: bool | None = None  # a line kept up to date in place; None: when the stream is a terminal
    columns: int | None = None  # the terminal's width; None: as the terminal says
    evals: list[tuple[int, float]] = field(default_factory=list)
    _started: float | None = None
    _line_shown: bool = False

    def __post_init__(self) -> None:
        if self.live is None:
            self.live = self.enabled and not self.verbose and self.stream.isatty()

    def start(self) -> None:
        """The clock of the estimates starts (at run_start)."""
        self._started = self.clock()

    def _seconds(self) -> float:
        return self.clock() - self._started if self._started is not None else 0.0

    def _accuracy(self) -> str:
        if not self.evals:
            return f"no eval yet (target {self.goal.target:.4f})"
        return f"mlm accuracy {self.evals[-1][1]:.4f} at the last eval (target {self.goal.target:.4f})"

    def step(self, step: int, samples: int, details: str) -> None:
        """A print interval: `details` (loss, learning rate, rates) as a line of its own when verbose; the line
        in place on a terminal."""
        if not self.enabled:
            return
        if self.verbose:
            self._print(f"step {step} samples {samples} {details}")
        elif self.live:
            seconds = self._seconds()
            text = (f"step {step:,}: {samples:,} samples, {self._accuracy()}, {duration(seconds)} since run_start, "
                    f"{time_left(self.goal, self.evals, samples, seconds)}")
            width = (self.columns or shutil.get_terminal_size().columns) - 1  # a wrapped line \r cannot clear
            self.stream.write(f"\r{text[:width]}\x1b[K")
            self.stream.flush()
            self._line_shown = True

    def eval(self, samples: int, accuracy: float) -> None:
        """An eval's result: one line, with the time left unless it ends the run."""
        self.evals.append((samples, accuracy))
        if not self.enabled:
            return
        seconds = self._seconds()
        line = f"eval at {samples:,} samples: mlm accuracy {accuracy:.4f}, target {self.goal.target:.4f}"
        if accuracy >= self.goal.target:
            line += f" reached; {duration(seconds)} since run_start"
        elif samples >= self.goal.cap:
            line += f" not reached by the sample cap ({self.goal.cap:,}); {duration(seconds)} since run_start"
        else:
            line += f"; {duration(seconds)} since run_start, {time_left(self.goal, self.evals, samples, seconds)}"
        self._print(line)

    def close(self) -> None:
        """Clears the line in place, so that what follows starts on a line of its own."""
        if self._line_shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._line_shown = False

    def _print(self, line: str) -> None:
        self.close()
        self.stream.write(line + "\n")
        self.stream.flush()
