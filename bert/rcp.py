"""The reference convergence points (RCPs) of the installed mlperf-logging, as a descriptor uses them.

Each RCP of `rcp_checker/training_<ruleset>/rcps_bert.json` is a batch size, the reference's hyperparameters at it
and the samples to converge of the reference's runs. They are read through the RCP checker itself
(mlperf_logging.rcp_checker.RCP_Checker: its olympic mean, spread, pruning and interpolation), never copied:
`reference_points` gives every RCP with its hyperparameters under this harness's run.optimizer names,
`checker_choice` the record the RCP checker judges a batch size against (compliance reads it too),
`convergence` its statistics, `safe_sample_cap` a run.max_samples that no converging run reaches,
`sample_cap_floor` the least a closed run's cap may be. A ruleset without BERT RCPs and a batch size no RCP
covers are one-line RcpErrors.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import math
from dataclasses import dataclass
from pathlib import Path

from bert.mlperf_rules import BENCHMARK, RULESETS, converging_eval

USAGE = "training"
# The RCP file's hyperparameter keys -> the run.optimizer fields they set. Its gradient_accumulation_steps is the
# reference TPU's shape (a run's own shape sets it) and no hyperparameter; opt_epsilon is what the log calls
# opt_lamb_epsilon.
HYPERPARAMETER_FIELDS = {
    "opt_base_learning_rate": "base_learning_rate",
    "opt_epsilon": "epsilon",
    "opt_learning_rate_training_steps": "training_steps",
    "num_warmup_steps": "warmup_steps",
    "start_warmup_step": "start_warmup_step",
    "opt_lamb_beta_1": "beta_1",
    "opt_lamb_beta_2": "beta_2",
    "opt_lamb_weight_decay_rate": "weight_decay_rate",
}
# How far beyond the reference runs' mean a run may still converge, in their standard deviations: the cap derived
# from an RCP lets a run converge as late as the slowest reference run or mean + SPREADS x stdev, whichever is later.
SPREADS = 3.0


class RcpError(ValueError):
    """No RCP for what was asked (a ruleset, a batch size); the message says what exists. `field`: the run field
    whose value asked for it."""

    field = "run.rcp_hyperparameters"


class RulesetError(RcpError):
    field = "run.ruleset"


@dataclass(frozen=True)
class ReferencePoint:
    name: str  # the RCP's name in the file, "bert_ref_3072"
    batch_size: int
    hyperparameters: dict[str, float | int]  # run.optimizer field -> the reference's value
    samples: tuple[int, ...]  # samples to converge of each reference run, sorted
    mean: float  # their olympic mean, as the RCP checker computes it
    stdev: float

    def hyperparameters_text(self) -> str:
        return ", ".join(f"{name} {value:g}" for name, value in self.hyperparameters.items())


@dataclass(frozen=True)
class Convergence:
    """What the RCP checker expects of runs at one batch size."""

    batch_size: int
    mean: float  # samples to converge: the reference's olympic mean
    stdev: float
    slowest: float  # the slowest reference run (mean + SPREADS x stdev where the point is interpolated)
    source: str  # "the RCP at 3072", "interpolated between the RCPs at 448 and 4608", ...


def rcp_file(ruleset: str) -> Path:
    """The installed mlperf-logging's BERT RCP file of `ruleset`; RcpError when it has none."""
    spec = importlib.util.find_spec("mlperf_logging")
    if spec is None or not spec.submodule_search_locations:
        raise RcpError("mlperf-logging is not installed, and the reference convergence points come from it: "
                       "install the harness's dependencies (bootstrap.sh does)")
    path = Path(spec.submodule_search_locations[0]) / "rcp_checker" / f"{USAGE}_{ruleset}" / f"rcps_{BENCHMARK}.json"
    if not path.is_file():
        raise RulesetError(f"ruleset {ruleset!r}: mlperf-logging {_version()} has no reference convergence points "
                           f"for BERT under it (no {path.parent.name}/{path.name}); use one of {', '.join(RULESETS)}")
    if ruleset not in RULESETS:  # 5.1.0 still carries BERT's RCPs, but its checkers no longer know BERT
        raise RulesetError(f"ruleset {ruleset!r}: BERT was retired after MLPerf Training v5.0 and this harness's runs "
                           f"are checked under {' or '.join(RULESETS)}; use one of them")
    return path


def _version() -> str:
    try:
        return importlib.metadata.version("mlperf-logging")
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown)"


def rcp_source(ruleset: str) -> str:
    """Where the RCPs of `ruleset` come from, in words: the package, its version and the file."""
    return f"mlperf-logging {_version()} rcp_checker/{USAGE}_{ruleset}/rcps_{BENCHMARK}.json"


@functools.lru_cache(maxsize=len(RULESETS) + 2)
def _checker(ruleset: str):
    rcp_file(ruleset)  # a one-line refusal before the checker's own exceptions
    from mlperf_logging.rcp_checker.rcp_checker import RCP_Checker

    return RCP_Checker(USAGE, ruleset, BENCHMARK, verbose=False)


def _point(name: str, record: dict, ruleset: str) -> ReferencePoint:
    given = record["Hyperparams"]
    missing = [key for key in HYPERPARAMETER_FIELDS if key not in given]
    if missing:
        raise RcpError(f"{rcp_source(ruleset)}: {name} states no {', '.join(missing)}; its hyperparameters cannot "
                       "be taken: state run.optimizer's values in the descriptor")
    values = {field: given[key] for key, field in HYPERPARAMETER_FIELDS.items()}
    return ReferencePoint(name, int(record["BS"]), values, tuple(sorted(record["Epochs to converge"])),
                          float(record["RCP Mean"]), float(record["RCP Stdev"]))


@functools.lru_cache(maxsize=len(RULESETS) + 2)
def reference_points(ruleset: str) -> dict[int, ReferencePoint]:
    """Every BERT RCP of `ruleset`, by batch size, in batch order."""
    return {point.batch_size: point for point in sorted(
        (_point(name, record, ruleset) for name, record in _checker(ruleset).rcp_data.items()),
        key=lambda p: p.batch_size)}


def nearest_points(batch_size: int, ruleset: str) -> list[ReferencePoint]:
    """The RCP at `batch_size`, else the nearest below and above it (one of them at either end)."""
    points = reference_points(ruleset)
    if batch_size in points:
        return [points[batch_size]]
    below = [p for b, p in points.items() if b < batch_size][-1:]
    above = [p for b, p in points.items() if b > batch_size][:1]
    return below + above


def nearest_text(batch_size: int, ruleset: str, values: bool = True) -> str:
    """The nearest RCPs of `batch_size` in words, each with its hyperparameters when `values`."""
    return " and ".join(f"{p.batch_size}" + (f" ({p.hyperparameters_text()})" if values else "")
                        for p in nearest_points(batch_size, ruleset))


def point_for(batch_size: int, ruleset: str) -> ReferencePoint:
    """The RCP at exactly `batch_size`; RcpError naming the nearest ones when no RCP has it."""
    points = reference_points(ruleset)
    if batch_size not in points:
        raise RcpError(f"no reference convergence point has global batch {batch_size} ({rcp_source(ruleset)}); the "
                       f"nearest are {nearest_text(batch_size, ruleset, values=False)} (RCP batch sizes: "
                       f"{', '.join(map(str, points))})")
    return points[batch_size]


@dataclass(frozen=True)
class CheckerChoice:
    """The RCP record the RCP checker compares a batch size with, chosen as it chooses among its pruned RCPs."""

    record: dict  # the RCP record; an interpolated one is made for the batch size
    how: str  # "reference", "interpolated" or "smallest reference" (below the smallest pruned RCP)
    sources: tuple[dict, ...]  # the RCP records it comes from (two for an interpolated one)


def checker_choice(batch_size: int, ruleset: str) -> CheckerChoice | None:
    """The record the RCP checker judges runs of `batch_size` against; None above the largest RCP (it has none)."""
    checker, pruned = _checker(ruleset), "pruned_rcps"
    record = checker._find_rcp(batch_size, pruned)
    if record is not None:
        return CheckerChoice(record, "reference", (record,))
    low = checker._find_top_min_rcp(batch_size, pruned)
    high = checker._find_bottom_max_rcp(batch_size, pruned)
    if high is None:
        return None
    if low is None:
        smallest = checker._find_min_rcp(pruned)
        return CheckerChoice(smallest, "smallest reference", (smallest,))
    return CheckerChoice(checker._create_interp_rcp(batch_size, low, high)[1], "interpolated", (low, high))


def pruned_batch_sizes(ruleset: str) -> list[int]:
    """The batch sizes of the RCPs the RCP checker keeps after its pruning."""
    return sorted(int(record["BS"]) for record in _checker(ruleset).pruned_rcp_data.values())


def convergence(batch_size: int, ruleset: str) -> Convergence | None:
    """The samples to converge the RCP checker expects at `batch_size`: an RCP's own runs at its batch size,
    else the record it chooses (an interpolation between the pruned RCPs around it, or below them the smallest
    pruned RCP); None above the largest RCP (the checker has none)."""
    points = reference_points(ruleset)
    if batch_size in points:
        point = points[batch_size]
        return Convergence(batch_size, point.mean, point.stdev, float(point.samples[-1]),
                           f"the RCP at {batch_size} ({point.name})")
    choice = checker_choice(batch_size, ruleset)
    if choice is None:
        return None
    if choice.how == "smallest reference":
        smallest = points[int(choice.record["BS"])]
        return Convergence(batch_size, smallest.mean, smallest.stdev, float(smallest.samples[-1]),
                           f"the smallest RCP the checker keeps, at {smallest.batch_size}")
    mean, stdev = float(choice.record["RCP Mean"]), float(choice.record["RCP Stdev"])
    low, high = choice.sources
    return Convergence(batch_size, mean, stdev, mean + SPREADS * stdev,
                       f"interpolated between the RCPs at {low['BS']} and {high['BS']}")


def sample_cap_floor(reference: Convergence, eval_interval: int) -> int:
    """The least run.max_samples of a closed run: the reference's mean samples to converge plus one eval interval.
    Below it, about every run slower than the mean stops aborted before the eval that would reach the target."""
    return math.ceil(reference.mean) + eval_interval


def safe_sample_cap(reference: Convergence, global_batch: int, eval_interval: int) -> int:
    """A run.max_samples that no run converging like the reference's aborts: the eval at which a run as slow as the
    slowest reference run, or mean + SPREADS x stdev, converges; at least sample_cap_floor."""
    latest = max(reference.slowest, reference.mean + SPREADS * reference.stdev)
    floor = sample_cap_floor(reference, eval_interval)
    steps, _ = converging_eval(latest, global_batch, eval_interval)
    return max(steps * global_batch, math.ceil(floor / global_batch) * global_batch)
