"""The trainer started as run_and_time.sh starts it (`mlperf-bert train`, under torchrun for several ranks), for
tests that run it to the end, break it or read its log (compliance.result_log)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def train_command(system: Path, data: Path, log: Path | str, seed: int = 1) -> list[str]:
    """One rank of `mlperf-bert train`: `system`'s descriptor on the dataset `data`, logging to `log`."""
    return [sys.executable, "-m", "bert.cli", "train", "--system", str(system), "--seed", str(seed),
            "--log-file", str(log), "--data-dir", str(data)]


def torchrun_command(ranks: int, system: Path, data: Path, log: Path | str, seed: int = 1) -> list[str]:
    """train_command on `ranks` processes of this host, started by torchrun."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={ranks}",
            *train_command(system, data, log, seed)[1:]]


def run_training(folder: Path, system: Path, data: Path, ranks: int, env: dict,
                 seed: int = 3) -> tuple[subprocess.CompletedProcess, Path]:
    """torchrun_command to its end (5 minutes at most), logging to the first free `folder/result_<i>.txt`."""
    log = next(folder / f"result_{i}.txt" for i in range(100) if not (folder / f"result_{i}.txt").exists())
    proc = subprocess.run(torchrun_command(ranks, system, data, log, seed), env=env, capture_output=True, text=True,
                          timeout=300)
    return proc, log
