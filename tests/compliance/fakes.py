"""Result logs written in seconds through bert.mllog (the trainer's own writer), with chosen contents: runs of
the committed code, on a clock that advances as a run's would."""

from __future__ import annotations

import functools
import itertools
import json
import time
from pathlib import Path
from unittest import mock

from bert.mllog import RunLog
from bert.provenance import CodeVersion, committed_code
from bert.system import Descriptor, load_descriptor

INTERVAL = 1024
STEP_MS = 1000  # between two lines of a fake run, plus a few ms that differ from run to run, as genuine runs differ
_RUNS = itertools.count()


@functools.cache
def head_code() -> CodeVersion:
    """The code of this checkout's HEAD, which `package` holds: what a fake run claims to have run."""
    code = committed_code()
    assert code is not None, "the compliance tests package this checkout: run them in a git clone"
    return code


class _Clock:
    """mllog's clock for one fake run: from now, `step` ms per line."""

    def __init__(self, step: int):
        self.now, self.step = int(time.time() * 1000), step

    def __call__(self) -> int:
        self.now += self.step
        return self.now


def micro_system(division: str = "open", batch_size: int = 32) -> Descriptor:
    """cpu_micro in `division` at `batch_size` (its sample cap raised to one step where the batch is larger)."""
    base = load_descriptor("cpu_micro")
    return base.variant({"global_batch_size": batch_size, "max_samples": max(batch_size, base.run.max_samples)},
                        description={"division": division})


def write_run(path: Path, seed: int, system: Descriptor | None = None, accuracies=(0.04, 0.05, 0.07),
              status: str = "success", interval: int = INTERVAL) -> Path:
    """One run's log: init, the hyperparameters, an eval every `interval` samples, run_stop with `status`."""
    system = system or micro_system()
    path.unlink(missing_ok=True)  # the log's file handler appends
    with mock.patch("mlperf_logging.mllog.mllog._current_time_ms", _Clock(STEP_MS + next(_RUNS) % 997)):
        log = RunLog(path, echo=False)
        log.cache_clear(False)
        log.init_start()
        log.submission(system)
        log.seed(seed)
        log.hyperparameters(system)
        log.target(system.run.eval.target_accuracy)
        log.code_version(head_code())
        log.init_stop()
        log.run_start()
        for i, accuracy in enumerate(accuracies):
            log.block_start(i * interval, interval)
            log.block_stop(i * interval)
            log.eval_start((i + 1) * interval)
            log.eval_result((i + 1) * interval, accuracy)
        log.run_stop(status, len(accuracies) * interval, 256)
        log.close()
    return path


def write_runs(folder: Path, count: int = 10, system: Descriptor | None = None, first_seed: int = 1, **run) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        write_run(folder / f"result_{i}.txt", first_seed + i, system, **run)
    return folder


# A closed-division run that the RCP checker accepts at batch size 448: converged at 2.4M samples, just
# under the reference mean (2.41M), so the score is scaled by about 1.006.
CLOSED_RUN = {"accuracies": (0.4, 0.5, 0.6, 0.65, 0.68, 0.70, 0.71, 0.73), "interval": 300_000}


def write_package(root: Path, system: Descriptor | None = None, name: str = "cpu_micro", **run) -> Path:
    """ORG/systems/<name>.json and ORG/results/<name>/bert/result_0..9.txt (no implementation folder)."""
    system = system or micro_system()
    (root / "systems").mkdir(parents=True)
    (root / "systems" / f"{name}.json").write_text(json.dumps(system.description, indent=2))
    write_runs(root / "results" / name / "bert", system=system, **run)
    return root


def write_other_benchmark(org: Path, system: str, benchmark: str, log: Path | None = None) -> Path:
    """results/<system>/<benchmark>/result_0.txt of another benchmark (a BERT log relabelled, or `log` as it is),
    with systems/<system>.json when the system has none yet."""
    folder = org / "results" / system / benchmark
    folder.mkdir(parents=True, exist_ok=True)
    if log is None:
        log = write_run(folder / "result_0.txt", seed=1)
        edit_lines(log, lambda line: line.replace('"value": "bert"', f'"value": "{benchmark}"'))
    else:
        (folder / "result_0.txt").write_bytes(log.read_bytes())
    description = org / "systems" / f"{system}.json"
    if not description.exists():
        description.parent.mkdir(parents=True, exist_ok=True)
        description.write_text(json.dumps(micro_system().description, indent=2))
    return folder / "result_0.txt"


def write_round(root: Path) -> Path:
    """A results repository of three submitters: OrgA with a BERT system and a retinanet one, OrgB with two BERT
    systems whose JSONs carry a field MLPerf does not know, OrgC with an rgat system only; a .github folder and a
    licence beside them, as a checkout of mlcommons/training_results holds."""
    write_package(root / "OrgA", name="a_bert")
    write_other_benchmark(root / "OrgA", "a_vision", "retinanet")
    write_package(root / "OrgB", name="b_one")
    write_runs(root / "OrgB" / "results" / "b_two" / "bert", first_seed=100)
    for name in ("b_one", "b_two"):  # as NVIDIA's v5.0 JSONs carry framework_name
        described = dict(micro_system().description, framework_name="PyTorch")
        (root / "OrgB" / "systems" / f"{name}.json").write_text(json.dumps(described, indent=2))
    write_other_benchmark(root / "OrgC", "c_graph", "rgat")
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "check.yml").write_text("on: push\n")
    (root / "LICENSE.md").write_text("Apache 2.0\n")
    return root


def edit_lines(path: Path, edit) -> None:
    """Rewrites a log line by line: `edit(line)` returns the new line, or None to drop it."""
    lines = [edit(line) for line in path.read_text().splitlines()]
    path.write_text("".join(f"{line}\n" for line in lines if line is not None))


def edit_events(path: Path, edit) -> None:
    """Rewrites a log event by event: `edit(index, event)` returns the new event, a list of events, or None to
    drop it (lines that are no event are kept)."""
    out = []
    for index, line in enumerate(path.read_text().splitlines()):
        if not line.startswith(":::MLLOG "):
            out.append(line)
            continue
        new = edit(index, json.loads(line[len(":::MLLOG "):]))
        out += [f":::MLLOG {json.dumps(e)}" for e in ([] if new is None else new if isinstance(new, list) else [new])]
    path.write_text("".join(f"{line}\n" for line in out))


def time_of(path: Path, key: str) -> float:
    """The time_ms of the first `key` event of a log."""
    return next(json.loads(line[len(":::MLLOG "):])["time_ms"] for line in path.read_text().splitlines()
                if f'"key": "{key}"' in line)


# Genuine patterns, read off the published BERT logs of Training v4.1 and v5.0 that the official tools accept.

def as_two_nodes(path: Path, ranks: int = 16, skew_ms: int = 2000) -> Path:
    """Every rank logs cache_clear and init_start, a few ms out of order, and the second node's clock runs
    `skew_ms` ahead of the first's (Dell's 2-node runs: lines go back by up to 2.8 s before run_start)."""
    def per_rank(_, event):
        if event["key"] not in ("cache_clear", "init_start"):
            return event
        per_node = ranks // 2
        return [dict(event, time_ms=event["time_ms"] + (skew_ms if rank >= per_node else 0) + (rank * 7) % 5 - 2)
                for rank in range(ranks)]
    edit_events(path, per_rank)
    return path


def with_slow_init(path: Path, minutes: float = 31) -> Path:
    """init_stop more than 30 minutes after init_start (tinycorp's v5.0 tinybox_green result_2.txt): the compliance
    checker fails it, the package checker drops it under olympic scoring."""
    stop = time_of(path, "init_stop")
    edit_events(path, lambda _, e: dict(e, time_ms=e["time_ms"] + minutes * 60_000) if e["time_ms"] >= stop else e)
    return path


def truncated(path: Path) -> Path:
    """A log that ends before run_stop (tinycorp's v4.1 tinybox_green result_2.txt), dropped the same way."""
    edit_events(path, lambda _, e: None if e["key"] in ("train_samples", "eval_samples", "run_stop") else e)
    return path


def stating_platform(path: Path, platform: str | None) -> Path:
    """The log states `platform` as its submission_platform ("2xSUBMISSION_PLATFORM_PLACEHOLDER"), or none."""
    def edit(_, event):
        if event["key"] != "submission_platform":
            return event
        return None if platform is None else dict(event, value=platform)
    edit_events(path, edit)
    return path


# What no genuine run writes.

def zero_minutes(path: Path) -> Path:
    """Every line after run_start moved to run_start's time: the official tools score it 0 minutes."""
    start = time_of(path, "run_start")
    edit_events(path, lambda _, e: dict(e, time_ms=start) if e["time_ms"] > start else e)
    return path


def stopped_early(path: Path, seconds: float = 10) -> Path:
    """run_stop (and the lines after it) moved `seconds` before the last eval, still after run_start."""
    last_eval = max(json.loads(line[len(":::MLLOG "):])["time_ms"] for line in path.read_text().splitlines()
                    if '"key": "eval_accuracy"' in line)
    keys = ("train_samples", "eval_samples", "run_stop")
    edit_events(path, lambda _, e: dict(e, time_ms=last_eval - seconds * 1000) if e["key"] in keys else e)
    return path


def started_twice(path: Path) -> Path:
    """A second run_start, just after the first."""
    edit_events(path, lambda _, e: [e, dict(e, time_ms=e["time_ms"] + 1)] if e["key"] == "run_start" else e)
    return path


def with_value(path: Path, key: str, field: str, value) -> Path:
    """The first `key` event's `field` ("value" or "time_ms") set to `value` (NaN and Infinity as JSON writes them)."""
    seen = []

    def edit(_, event):
        if event["key"] == key and not seen:
            seen.append(event)
            return dict(event, **{field: value})
        return event
    edit_events(path, edit)
    return path
