"""The embedded default system end to end, against the goals a user of a 2-core machine is promised:
synthetic corpus written in under 30 s, the timed run (run_start to run_stop) at 0.720 in under 3 minutes, and
the whole `./run_and_time.sh` command (install done, corpus present) in under 4 minutes.

    python -m benchmarks.default_system              # cpu_tiny, one run
    python -m benchmarks.default_system --runs 3     # three seeds; the figures are medians

Everything runs in a scratch folder (its own corpus and logs), exactly as a user runs it: the corpus through
`mlperf-bert data synth`, each run through `run_and_time.sh`. Prints goal, ours and ratio (ours/goal, below 1 is
inside the goal) for each figure; the last line is `timed_run_s=<median>`. Results go to
benchmarks/default_system_results.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common.results_file import write_results
from compliance.result_log import read_result_log

REPO = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).with_name("default_system_results.md")
GOALS_S = {"data synthesis": 30.0, "timed run (run_start to run_stop)": 180.0, "whole run_and_time.sh": 240.0}


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return seconds, proc.stdout


def log_figures(path: Path) -> tuple[float, int, float, str]:
    """(timed seconds, training samples, last eval accuracy, run_stop status) from one MLPerf result log."""
    log = read_result_log(path)
    return log.run_minutes * 60, log.value("train_samples"), log.evals[-1].accuracy, log.status


def measure(system: str, runs: int, scratch: Path) -> tuple[dict[str, float], list[str]]:
    env = {**os.environ, "DATADIR": str(scratch / "data"), "LOGDIR": str(scratch / "logs")}
    synth_s, _ = timed([sys.executable, "-m", "bert.cli", "data", "synth", "--system", system,
                        "--out", str(scratch / "data")], env)
    rows, timed_runs, wholes = [], [], []
    for i in range(runs):
        whole_s, _ = timed(["bash", "run_and_time.sh", system], {**env, "SEED": str(1000 + i)})
        run_s, samples, accuracy, status = log_figures(scratch / "logs" / system / f"result_{i}.txt")
        rows.append(f"run {i} (seed {1000 + i}): {status}, {samples} samples, eval accuracy {accuracy:.4f}, "
                    f"timed {run_s:.1f} s, whole command {whole_s:.1f} s")
        print(rows[-1], flush=True)
        timed_runs.append(run_s)
        wholes.append(whole_s)
    figures = dict(zip(GOALS_S, [synth_s, statistics.median(timed_runs), statistics.median(wholes)]))
    return figures, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--system", default="cpu_tiny")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="default_system_") as scratch:
        figures, rows = measure(args.system, args.runs, Path(scratch))
    lines = [*rows, "", f"{'figure':<36} {'goal s':>8} {'ours s':>8} {'ours/goal':>9}"]
    lines += [f"{name:<36} {GOALS_S[name]:>8.0f} {value:>8.1f} {value / GOALS_S[name]:>9.2f}"
              for name, value in figures.items()]
    lines.append(f"timed_run_s={figures['timed run (run_start to run_stop)']:.1f}")
    print("\n".join(lines[len(rows):]))
    write_results(RESULTS, lines, sys.argv[1:], f", system {args.system}, {args.runs} run(s)")


if __name__ == "__main__":
    main()
