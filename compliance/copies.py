"""Copies of one run, judged by what a run measured, not by the bytes of its log.

A run measures its accuracy at each eval (eval_accuracy at its epoch_num, the samples trained) and the time each
eval ends (its time since run_start, which the blocks' throughputs make). Runs of different seeds do not repeat
each other's measurements, so a log that repeats another's is a copy of it, whatever else was changed: the seed, a
file name or line number in the metadata, a line moved by some milliseconds, every time shifted alike.

What genuine runs share, measured on the 3,381 published BERT logs of MLPerf Training v0.7 to v5.0 (15,210 pairs
of runs of one system): an accuracy is a count of correct tokens over the eval set's masked tokens, so two runs
sometimes measure the same value at the same epoch_num (263 pairs share one eval, 13 two, 2 three; runs whose model
diverged share their constant accuracy), and a deterministic system repeats its timings closely (Google's TPU runs
of v0.7: within 5 ms over seven evals). But no pair shares more than one eval measured within TIMED_WITHIN_MS of
the same time, nor more than three accuracies at all. Logs rounding their accuracies to a few digits make chance
coincidences likelier, so only values of enough significant digits count. Two runs are copies when they share

- at least MIN_TIMED distinct accuracies (of MIN_TIMED_DIGITS significant digits or more) at the same epoch_num,
  each measured within TIMED_WITHIN_MS of the same time since run_start; or
- at least MIN_SHARED distinct accuracies of MIN_SHARED_DIGITS significant digits or more at the same epoch_num,
  whatever their times (a copy whose lines were all moved), when the two logs state different seeds. Runs of the
  same seed on a deterministic implementation do repeat every accuracy: Dell's v3.0 package holds the run of seed
  29417 on two systems that differ in their network (4xR750xax4A100-PCIE-80GB and its -1opa variant), its 17
  accuracies the same, its times not.

A run of fewer evals than MIN_TIMED, or whose accuracies are too coarse to tell, is not judged a copy: it carries
too little measurement to tell a copy from a genuine run of a deterministic system.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass

from compliance.result_log import ResultLog, number

TIMED_WITHIN_MS = 100
MIN_TIMED, MIN_TIMED_DIGITS = 3, 4
MIN_SHARED, MIN_SHARED_DIGITS = 6, 6
WHY_COPIES_FAIL = "the official tools accept this, but runs of different seeds never repeat each other's measurements"


def significant_digits(value: float) -> int:
    """The significant digits of a number as a log prints it (0.7190141081809998: 16; 0.72: 2)."""
    mantissa = re.sub(r"e.*$", "", repr(float(value)).lower()).replace("-", "").replace(".", "").lstrip("0")
    return len(mantissa.rstrip("0"))


@dataclass(frozen=True)
class Measurements:
    """A run's evals: {(epoch_num, accuracy): ms since run_start} (the first, where an eval repeats)."""

    name: str
    evals: dict[tuple[float, float], float]
    seed: object = None  # the logged seed, None when the log states none


def measurements(log: ResultLog, name: str) -> Measurements | None:
    """What the run of `log` measured, or None when it has no run_start or no eval that says its epoch_num."""
    start = log.first("run_start")
    if start is None:
        return None
    evals: dict[tuple[float, float], float] = {}
    for event in log.all("eval_accuracy"):
        samples, accuracy = number(event.metadata.get("epoch_num")), number(event.value)
        if samples is not None and accuracy is not None and math.isfinite(samples) and math.isfinite(accuracy):
            evals.setdefault((samples, accuracy), event.time_ms - start.time_ms)
    return Measurements(name, evals, log.seed) if evals else None


def _distinct(evals: list[tuple[float, float]], digits: int) -> int:
    return len({accuracy for _, accuracy in evals if significant_digits(accuracy) >= digits})


def copy_evidence(a: Measurements, b: Measurements) -> str | None:
    """Why `b` is a copy of `a` (see the module), or None."""
    shared = [key for key in a.evals if key in b.evals]
    timed = [key for key in shared if abs(a.evals[key] - b.evals[key]) <= TIMED_WITHIN_MS]
    if _distinct(timed, MIN_TIMED_DIGITS) >= MIN_TIMED:
        return (f"{len(timed)} of its {len(b.evals)} evals measure the same accuracy at the same epoch_num, within "
                f"{TIMED_WITHIN_MS} ms of the same time since run_start")
    seeded = a.seed is not None and b.seed is not None and a.seed != b.seed
    if seeded and _distinct(shared, MIN_SHARED_DIGITS) >= MIN_SHARED:
        return (f"{len(shared)} of its {len(b.evals)} evals measure the same accuracy at the same epoch_num as a run "
                f"of another seed ({b.seed!r}, {a.seed!r})")
    return None


@dataclass(frozen=True)
class Copy:
    copy: str
    original: str
    evidence: str


def _candidates(runs: list[Measurements]) -> list[tuple[int, int]]:
    """The pairs (i < j) of runs that share enough evals to be copies: a package's thousand logs are not compared
    pair by pair."""
    holders: dict[tuple[float, float], list[int]] = {}
    for index, run in enumerate(runs):
        for key in run.evals:
            holders.setdefault(key, []).append(index)
    shared: dict[tuple[int, int], int] = {}
    for indices in holders.values():
        for pair in itertools.combinations(indices, 2):
            shared[pair] = shared.get(pair, 0) + 1
    return sorted(pair for pair, count in shared.items() if count >= min(MIN_TIMED, MIN_SHARED))


def find_copies(runs: list[Measurements]) -> list[Copy]:
    """Each run that copies an earlier one of `runs` (in their order), with the first run it copies."""
    copies, copied = [], set()
    for i, j in _candidates(runs):
        earlier, later = runs[i], runs[j]
        if later.name in copied:
            continue
        evidence = copy_evidence(earlier, later)
        if evidence is not None:
            copies.append(Copy(later.name, earlier.name, evidence))
            copied.add(later.name)
    return copies


def runs_measured(logs: list[ResultLog], label=lambda log: log.path.name) -> list[Measurements]:
    """The measurements of each log that has some, named by `label(log)`."""
    return [m for log in logs if (m := measurements(log, label(log))) is not None]
