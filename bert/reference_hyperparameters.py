"""Hyperparameters that follow the batch size: a descriptor's run.rcp_hyperparameters, and where each value of a
descriptor comes from.

A descriptor that asks for the reference's hyperparameters (`"rcp_hyperparameters": true`, or an RCP batch size)
gets, for every run.optimizer value that the RCPs carry and for run.max_samples, what it states itself (or a
descriptor based on it states), else the RCP's (bert.rcp: the installed mlperf-logging's file, never a copy):
the values of its bases were chosen for their batch sizes, so they are not inherited (`without_base_values`),
and `with_reference_values` fills them in from the RCP, the sample cap from the RCP's convergence statistics.

A closed descriptor that asks for nothing and whose learning rate or decay horizon was stated for another batch
size (a site descriptor that changes only the base's batch) is refused by `stale_hyperparameters`, naming the
values and the nearest RCPs. `value_origins` says, for `mlperf-bert system show`, which file of the chain (or
which RCP) each value comes from.
"""

from __future__ import annotations

import copy
from pathlib import Path

from bert.descriptor_files import merged_descriptor, origin_of, resolved_descriptor
from bert.kind_tables import kinds_where
from bert.mlperf_rules import DEFAULT_RULESET, mlperf_eval_interval
from bert.optim.kinds import OPTIMIZERS, stated_optimizer
from bert.rcp import (
    HYPERPARAMETER_FIELDS,
    RcpError,
    convergence,
    nearest_points,
    nearest_text,
    point_for,
    rcp_source,
    reference_points,
    safe_sample_cap,
)

ASK = "rcp_hyperparameters"  # the run field that asks for the RCP's values
RULESET = "ruleset"  # the run field naming the ruleset whose RCPs they are
OPTIMIZER_PATHS = tuple(f"optimizer.{name}" for name in HYPERPARAMETER_FIELDS.values())  # below the run block
CAP_PATH = "max_samples"
FOLLOWING_PATHS = (*OPTIMIZER_PATHS, CAP_PATH)  # what an RCP sets: its hyperparameters and a cap from its runs
# What a learning-rate schedule is chosen for a batch size by: its peak and its horizon in steps.
SCHEDULE_PATHS = ("optimizer.base_learning_rate", "optimizer.training_steps")


def value_at(data: object, path: str) -> object:
    """The value at the dotted `path` of descriptor JSON `data`, or None where it states none."""
    for part in path.split("."):
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def _has(run: object, path: str) -> bool:
    *parents, name = path.split(".")
    for part in parents:
        if not isinstance(run, dict):
            return False
        run = run.get(part)
    return isinstance(run, dict) and name in run


def asked_batch(run: object) -> int | None:
    """The RCP batch size whose values a run block asks for: its global batch for true, the size given, or None."""
    if not isinstance(run, dict):
        return None
    asked = run.get(ASK)
    if asked is True:
        batch = run.get("global_batch_size")
        return batch if isinstance(batch, int) and not isinstance(batch, bool) else None
    return asked if isinstance(asked, int) and not isinstance(asked, bool) and asked > 0 else None


def without_base_values(base: object) -> object:
    """The resolved JSON of a descriptor's bases without what an RCP sets (FOLLOWING_PATHS): a descriptor that asks
    for the RCP's values does not inherit its bases', which were chosen for their batch sizes."""
    data = copy.deepcopy(base)
    run = data.get("run") if isinstance(data, dict) else None
    if isinstance(run, dict):
        for path in FOLLOWING_PATHS:
            *parents, name = path.split(".")
            block = value_at(run, ".".join(parents)) if parents else run
            if isinstance(block, dict):
                block.pop(name, None)
    return data


def resolved_with_request(chain: list[tuple[Path, object]]) -> object:
    """The descriptor JSON of `chain` (bert.descriptor_files.resolved_descriptor's, most basic first) merged as
    the loader merges it, except that the file that asks for RCP values last (and asks for them) takes none of
    FOLLOWING_PATHS from its bases."""
    asking = origin_of(chain, f"run.{ASK}")
    index = next((i for i, (path, _) in enumerate(chain) if path == asking), None)
    own = chain[index][1] if index is not None else None
    if index is None or not (isinstance(own, dict) and own["run"].get(ASK)):
        return None
    data: object = {}
    for position, (_, part) in enumerate(chain):
        if position == index:
            data = without_base_values(data)
        data = merged_descriptor(data, part) if isinstance(data, dict) and isinstance(part, dict) else part
    return data


def with_reference_values(data: object, where: str) -> tuple[object, list[str]]:
    """`data` (resolved descriptor JSON) with what it does not state of FOLLOWING_PATHS filled from the RCP it asks
    for, and the run paths filled; as it is when it asks for none. Raises RcpError (no RCP there, a ruleset
    without RCPs, an optimizer the RCPs are not of); values of the wrong type are left for the loader to refuse."""
    run = data.get("run") if isinstance(data, dict) else None
    batch = asked_batch(run)
    if batch is None:
        return data, []
    ruleset = run.get(RULESET, DEFAULT_RULESET)
    if not isinstance(ruleset, str):
        return data, []
    kind = stated_optimizer(value_at(run, "optimizer.name"))
    if kind is not None and not kind.reference:
        references = kinds_where(OPTIMIZERS, lambda k: k.reference)
        titles, names = " or ".join(k.title for k in references), " or ".join(f'"{k.name}"' for k in references)
        raise RcpError(f"the reference convergence points are {titles} runs, but run.optimizer.name is "
                       f"{kind.name!r}: use {names}, or state the optimizer's values and set run.{ASK} to false")
    point = point_for(batch, ruleset)
    data = copy.deepcopy(data)
    run = data["run"]
    filled = []
    optimizer = run.setdefault("optimizer", {})
    if isinstance(optimizer, dict):
        for field, value in point.hyperparameters.items():
            if field not in optimizer:
                optimizer[field] = value
                filled.append(f"optimizer.{field}")
    if CAP_PATH not in run:
        cap = _derived_cap(run, ruleset)
        if cap is not None:
            run[CAP_PATH] = cap
            filled.append(CAP_PATH)
    return data, filled


def _derived_cap(run: dict, ruleset: str) -> int | None:
    """The sample cap of bert.rcp.safe_sample_cap at the run's batch size and eval interval (None when the run
    block's values are not numbers yet: the loader refuses them)."""
    batch, interval = run.get("global_batch_size"), value_at(run, "eval.interval_samples")
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        return None
    if interval is None:
        interval = mlperf_eval_interval(batch)
    if not isinstance(interval, int) or isinstance(interval, bool) or interval < 1:
        return None
    reference = convergence(batch, ruleset)
    if reference is None:
        raise RcpError(f"global batch {batch} is above the largest reference convergence point, so no sample cap can "
                       "be derived from one: state run.max_samples")
    return safe_sample_cap(reference, batch, interval)


def _batch_of(chain: list[tuple[Path, object]], upto: int) -> object:
    """run.global_batch_size as the files chain[0..upto] resolve it."""
    for _, own in reversed(chain[:upto + 1]):
        if isinstance(own, dict) and _has(own.get("run"), "global_batch_size"):
            return own["run"]["global_batch_size"]
    return None


def stale_hyperparameters(chain: list[tuple[Path, object]], data: dict) -> str | None:
    """Why a closed LAMB descriptor that asks for no RCP values runs hyperparameters chosen for another batch size:
    its learning rate or its decay horizon (SCHEDULE_PATHS) is stated only by a base of another global batch. None
    when both are its own."""
    run = data["run"]
    kind = stated_optimizer(value_at(run, "optimizer.name"))
    if data["system"].get("division") != "closed" or run.get(ASK) or kind is None or not kind.reference:
        return None
    files = [path for path, _ in chain]
    batch_origin = origin_of(chain, "run.global_batch_size")
    schedule = [origin_of(chain, f"run.{path}") for path in SCHEDULE_PATHS]
    if batch_origin is None or any(origin is None for origin in schedule):
        return None  # a required value missing: the loader says so
    copied = _another_rcps_values(run)
    if copied:
        return copied
    batch_at = files.index(batch_origin)
    chosen_at = min(files.index(origin) for origin in schedule)  # a stated peak with an inherited horizon: stale too
    their_batch, batch = _batch_of(chain, chosen_at), run["global_batch_size"]
    if chosen_at >= batch_at or their_batch == batch:
        return None
    inherited = [path for path in OPTIMIZER_PATHS
                 if (origin := origin_of(chain, f"run.{path}")) is not None and files.index(origin) < batch_at]
    values = ", ".join(f"{path.split('.')[-1]} {value_at(run, path):g}" for path in inherited)
    return (f"{values} were chosen for global batch {their_batch} by {files[chosen_at].name}, not for this "
            f"descriptor's {batch}; {_reference_hint(batch, run.get(RULESET, DEFAULT_RULESET))}")


def _another_rcps_values(run: dict) -> str | None:
    """Why a run's optimizer values are another RCP batch size's (copied with its descriptor, the batch changed)."""
    ruleset = run.get(RULESET, DEFAULT_RULESET)
    if not isinstance(ruleset, str):
        return None
    try:
        points = reference_points(ruleset)
    except RcpError:
        return None  # the loader names the ruleset
    stated = {path.split(".")[-1]: value_at(run, path) for path in OPTIMIZER_PATHS}

    def same(point) -> bool:
        return all(stated[field] == value for field, value in point.hyperparameters.items())

    own = points.get(run["global_batch_size"])
    if own is not None and same(own):  # 6144's and 6912's reference values are the same, for one
        return None
    for point in points.values():
        if point.batch_size != run["global_batch_size"] and same(point):
            return (f"{point.hyperparameters_text()} are the reference's values for global batch {point.batch_size} "
                    f"({point.name}), not for this descriptor's {run['global_batch_size']}; "
                    f"{_reference_hint(run['global_batch_size'], ruleset)}")
    return None


def _reference_hint(batch: int, ruleset: object) -> str:
    """What the RCPs offer at `batch`, and how to take it."""
    if not isinstance(ruleset, str):
        return "state run.optimizer's values for it"
    try:
        nearest = nearest_points(batch, ruleset)
    except RcpError as e:
        return f"{e}: state run.optimizer's values for {batch}"
    take = "true to take its values" if [p.batch_size for p in nearest] == [batch] else \
        f"{' or '.join(str(p.batch_size) for p in nearest)} to take that one's values"
    return (f"the nearest reference convergence points ({rcp_source(ruleset)}) are {nearest_text(batch, ruleset)}: "
            f"set run.{ASK} to {take}, or state run.optimizer's values for {batch}")


def _leaves(value: object, prefix: str) -> list[str]:
    if isinstance(value, dict) and value:
        return [leaf for key, item in value.items() for leaf in _leaves(item, f"{prefix}.{key}")]
    return [prefix]


def value_origins(chain: list[tuple[Path, object]], data: dict, filled: list[str], ruleset: str) -> dict[str, str]:
    """Every value of the resolved JSON `data` (dotted path -> where it comes from): the file of `chain` that states
    it last, or the RCP for the run paths `filled` from it."""
    batch = asked_batch(data.get("run"))
    rcp = f"the RCP at {batch} ({rcp_source(ruleset)})" if batch is not None else ""
    origins = {}
    for top in ("system", "run"):
        for leaf in _leaves(data.get(top, {}), top):
            below_run = leaf.removeprefix("run.")
            if top == "run" and below_run in filled:
                origins[leaf] = rcp if below_run != CAP_PATH else f"derived from the convergence statistics of {rcp}"
            else:
                origins[leaf] = _origin_name(chain, leaf)
    return origins


def _origin_name(chain: list[tuple[Path, object]], leaf: str) -> str:
    """The file that states `leaf`, or the nearest object above it (keys with dots in them, as run.search's)."""
    parts = leaf.split(".")
    for end in range(len(parts), 0, -1):
        origin = origin_of(chain, ".".join(parts[:end]))
        if origin is not None:
            return origin.name
    return "?"


def shown_descriptor(path: Path) -> tuple[dict, dict[str, str]]:
    """The descriptor at `path` as the loader resolves it (its bases merged in, the RCP values it asks for filled
    in) and where each of its values comes from (value_origins): what `mlperf-bert system show` prints. The
    descriptor must load (bert.system.load_descriptor) first."""
    data, chain = resolved_descriptor(path)
    data = resolved_with_request(chain) or data
    filled_data, filled = with_reference_values(data, str(path))
    ruleset = filled_data["run"].get(RULESET, DEFAULT_RULESET)
    return filled_data, value_origins(chain, filled_data, filled, ruleset)
