"""Result logs written in seconds through bert.mllog (the trainer's own writer), with chosen contents: runs of
the committed code, on a clock that advances as a run's would, each seed measuring its own accuracies (runs of
different seeds never measure the same); and packages of them as `package` writes them."""

from __future__ import annotations

import functools
import io
import itertools
import json
import subprocess
import tarfile
import time
from pathlib import Path
from unittest import mock

from bert.mllog import CODE_VERSION, TARGET_ACCURACY, RunLog
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


# The machine a closed-division fake run claims: its logs train BERT-large's millions of samples in a minute,
# which only a machine of this size can (compliance.hardware); two CPU cores would need days.
CLOSED_MACHINE = {"system_name": "micro BERT on 8x8 H100 (a fake for tests)", "number_of_nodes": "8",
                  "accelerators_per_node": "8", "accelerator_model_name": "NVIDIA H100-SXM5-80GB"}


def micro_system(division: str = "open", batch_size: int = 32, **description: str) -> Descriptor:
    """cpu_micro in `division` at `batch_size` (its sample cap raised to one step where the batch is larger), its
    system description changed by `description`; in the closed division, on CLOSED_MACHINE."""
    base = load_descriptor("cpu_micro")
    machine = CLOSED_MACHINE if division == "closed" else {}
    return base.variant({"global_batch_size": batch_size, "max_samples": max(batch_size, base.run.max_samples)},
                        description={"division": division, **machine, **description})


def gpu_system(name: str, nodes: int, per_node: int, model: str, batch_size: int = 768) -> Descriptor:
    """A closed-division system of `nodes` x `per_node` accelerators of `model`, named `name` (its runs train the
    micro model, but state BERT-large's batch and reach 0.720 as a closed run must)."""
    return micro_system("closed", batch_size, system_name=name, number_of_nodes=str(nodes),
                        accelerators_per_node=str(per_node), accelerator_model_name=model).variant(name=name)


def seed_accuracy(accuracy: float, seed: int) -> float:
    """`accuracy` as the run of `seed` measures it: off by a few hundred-millionths, its own to each seed (and never
    a round number), as genuine runs of different seeds differ."""
    return accuracy + (seed % 997 + 1) * 1e-8


def write_run(path: Path, seed: int, system: Descriptor | None = None, accuracies=(0.04, 0.05, 0.07),
              status: str = "success", interval: int = INTERVAL) -> Path:
    """One run's log: init, the hyperparameters, an eval every `interval` samples (the accuracies as the run of
    `seed` measures them: seed_accuracy), run_stop with `status`."""
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
            log.eval_result((i + 1) * interval, seed_accuracy(accuracy, seed))
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


IMPLEMENTATION = Path("benchmarks") / "bert" / "implementations" / "pytorch"


@functools.cache
def _head_bert_archive() -> bytes:
    """`git archive HEAD bert`: the code the fake runs log (head_code)."""
    return subprocess.run(["git", "archive", "--format=tar", "HEAD", "bert"], cwd=Path(__file__).parents[2],
                          capture_output=True, check=True, timeout=120).stdout


def write_implementation(root: Path) -> Path:
    """ORG/benchmarks/bert/implementations/pytorch/ holding HEAD's bert package, as `package` writes it."""
    impl = root / IMPLEMENTATION
    impl.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(_head_bert_archive())) as tar:
        tar.extractall(impl, filter="data")
    return impl


def add_system(root: Path, system: Descriptor | None = None, name: str = "cpu_micro", **run) -> Path:
    """A system of a package as `package` writes it: systems/<name>.json, results/<name>/bert/result_0..9.txt, and
    the descriptor beside the code; returns the results folder."""
    system = (system or micro_system()).variant(name=name)
    (root / "systems").mkdir(parents=True, exist_ok=True)
    (root / "systems" / f"{name}.json").write_text(json.dumps(system.description, indent=2))
    system.write(write_implementation(root) / "systems")
    return write_runs(root / "results" / name / "bert", system=system, **run)


def published_style(path: Path) -> Path:
    """The log without the lines only this harness writes (target_accuracy, code_version), as another
    submitter's harness writes it."""
    edit_events(path, lambda _, e: None if e["key"] in (TARGET_ACCURACY, CODE_VERSION) else e)
    return path


def write_published_package(root: Path, system: Descriptor, name: str, **run) -> Path:
    """ORG/systems/<name>.json and ORG/results/<name>/bert/result_0..9.txt as another submitter publishes them: no
    implementation folder of this harness, no line only this harness logs; returns the results folder."""
    (root / "systems").mkdir(parents=True, exist_ok=True)
    (root / "systems" / f"{name}.json").write_text(json.dumps(system.description, indent=2))
    folder = write_runs(root / "results" / name / "bert", system=system, **run)
    for log in folder.glob("result_*.txt"):
        published_style(log)
    return folder


def write_package(root: Path, system: Descriptor | None = None, name: str = "cpu_micro", **run) -> Path:
    """ORG/systems/<name>.json, ORG/results/<name>/bert/result_0..9.txt and the implementation folder (HEAD's bert
    package and the descriptor), as `package` writes them."""
    add_system(root, system, name, **run)
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
    systems published by another harness, whose JSONs carry a field MLPerf does not know, OrgC with an rgat system
    only; a .github folder and a licence beside them, as a checkout of mlcommons/training_results holds."""
    write_package(root / "OrgA", name="a_bert")
    write_other_benchmark(root / "OrgA", "a_vision", "retinanet")
    for name, first_seed in (("b_one", 1), ("b_two", 100)):  # published as another harness's, as NVIDIA's v5.0
        write_published_package(root / "OrgB", micro_system().variant(name=name), name, first_seed=first_seed)
        described = dict(micro_system().description, framework_name="PyTorch")  # whose JSONs carry framework_name
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


# Forms a forger tried (and genuine patterns of other submitters' logs), on the times of a written log.

def _retimed(path: Path, new_time) -> Path:
    """Every event after run_start given the time `new_time(start, time_ms)`."""
    start = time_of(path, "run_start")
    edit_events(path, lambda _, e: dict(e, time_ms=new_time(start, e["time_ms"])) if e["time_ms"] > start else e)
    return path


def moved_to_start(path: Path, ms: int = 1) -> Path:
    """Every line after run_start moved to run_start + `ms` (a "run" of 1 ms)."""
    return _retimed(path, lambda start, _: start + ms)


def compressed(path: Path, factor: float = 1000) -> Path:
    """Every line after run_start brought `factor` times closer to it."""
    return _retimed(path, lambda start, t: start + round((t - start) / factor))


def clock_moved_in(path: Path, ms: int = 4900) -> Path:
    """run_start moved `ms` later and run_stop `ms` earlier, every other line as it was."""
    shift = {"run_start": ms, "run_stop": -ms}
    edit_events(path, lambda _, e: dict(e, time_ms=e["time_ms"] + shift.get(e["key"], 0)))
    return path


def evals_printed_late(path: Path) -> Path:
    """The eval_accuracy lines moved, each with its time, to a batch after the last block_stop (another
    submitter's style: the times are right, the line order is not time order)."""
    events = [json.loads(line[len(":::MLLOG "):]) for line in path.read_text().splitlines()]
    evals = [e for e in events if e["key"] == "eval_accuracy"]
    rest = [e for e in events if e["key"] != "eval_accuracy"]
    last_block = max(i for i, e in enumerate(rest) if e["key"] == "block_stop")
    ordered = rest[:last_block + 1] + evals + rest[last_block + 1:]
    path.write_text("".join(f":::MLLOG {json.dumps(e)}\n" for e in ordered))
    return path


def evaluated_offline(path: Path, reached: int) -> Path:
    """Intel-Habana's style: the run trains to its last step, then prints each eval (eval_accuracy lines only) after
    the training, with the time its checkpoint was trained (the block's block_stop), up to the eval `reached` (from
    0) that reached the target; run_stop is timed at that eval."""
    events = [json.loads(line[len(":::MLLOG "):]) for line in path.read_text().splitlines()]
    block_ends = [e["time_ms"] for e in events if e["key"] == "block_stop"]
    evals = [dict(e, time_ms=end) for e, end in zip([e for e in events if e["key"] == "eval_accuracy"], block_ends)]
    rest = [e for e in events if e["key"] not in ("eval_start", "eval_stop", "eval_accuracy")]
    last_block = max(i for i, e in enumerate(rest) if e["key"] == "block_stop")
    ordered = rest[:last_block + 1] + evals[:reached + 1] + rest[last_block + 1:]
    stop_time = evals[reached]["time_ms"]
    ordered = [dict(e, time_ms=stop_time) if e["key"] == "run_stop" else e for e in ordered]
    path.write_text("".join(f":::MLLOG {json.dumps(e)}\n" for e in ordered))
    return path


def with_stated_system(path: Path, description: dict) -> Path:
    """A :::SYSJSON line, as NVIDIA's scripts print the system a run sees, at the top of the log (after a shell's
    echo, with its quote)."""
    path.write_text(f"+ echo ':::SYSJSON {json.dumps(description)}'\n" + path.read_text())
    return path
