"""Result logs written in seconds through bert.mllog (the trainer's own writer), with chosen contents."""

from __future__ import annotations

import json
from pathlib import Path

from bert.mllog import RunLog
from bert.system import System, load_system

INTERVAL = 1024


def micro_system(division: str = "open", batch_size: int = 32) -> System:
    """cpu_micro in `division` at `batch_size` (its sample cap raised to one step where the batch is larger)."""
    base = load_system("cpu_micro")
    return base.variant({"global_batch_size": batch_size, "max_samples": max(batch_size, base.run.max_samples)},
                        description={"division": division})


def write_run(path: Path, seed: int, system: System | None = None, accuracies=(0.04, 0.05, 0.07),
              status: str = "success", interval: int = INTERVAL) -> Path:
    """One run's log: init, the hyperparameters, an eval every `interval` samples, run_stop with `status`."""
    system = system or micro_system()
    path.unlink(missing_ok=True)  # the log's file handler appends
    log = RunLog(path, echo=False)
    log.cache_clear(False)
    log.init_start()
    log.submission(system)
    log.seed(seed)
    log.hyperparameters(system)
    log.target(system)
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


def write_runs(folder: Path, count: int = 10, system: System | None = None, first_seed: int = 1, **run) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        write_run(folder / f"result_{i}.txt", first_seed + i, system, **run)
    return folder


# A closed-division run that the RCP checker accepts at batch size 448: converged at 2.4M samples, just
# under the reference mean (2.41M), so the score is scaled by about 1.006.
CLOSED_RUN = {"accuracies": (0.4, 0.5, 0.6, 0.65, 0.68, 0.70, 0.71, 0.73), "interval": 300_000}


def write_package(root: Path, system: System | None = None, name: str = "cpu_micro", **run) -> Path:
    """ORG/systems/<name>.json and ORG/results/<name>/bert/result_0..9.txt (no implementation folder)."""
    system = system or micro_system()
    (root / "systems").mkdir(parents=True)
    (root / "systems" / f"{name}.json").write_text(json.dumps(system.description, indent=2))
    write_runs(root / "results" / name / "bert", system=system, **run)
    return root


def edit_lines(path: Path, edit) -> None:
    """Rewrites a log line by line: `edit(line)` returns the new line, or None to drop it."""
    lines = [edit(line) for line in path.read_text().splitlines()]
    path.write_text("".join(f"{line}\n" for line in lines if line is not None))
