"""The optimizer and loader benchmarks end to end at toy sizes: each runs, holds its own check and prints its
last line (a smoke run: the figures themselves are measured by running the scripts, never in tests)."""

import re
import subprocess
import sys

from tests.helpers.repo import REPO


def _run(benchmark: str, *args: str, env: dict) -> list[str]:
    proc = subprocess.run([sys.executable, "-m", f"benchmarks.{benchmark}", *args, "--no-results"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()


def test_optimizer_benchmark_compares_compiled_and_eager_lamb_and_prints_the_ratio(cpu_env):
    lines = _run("optimizer_step", "--model", "micro", "--rounds", "2", "--updates", "1", env=cpu_env)
    eager = float(re.search(r"eager LAMB \(foreach\): ([0-9.]+) ms", "\n".join(lines)).group(1))
    compiled = float(re.search(r"compiled LAMB: ([0-9.]+) ms", "\n".join(lines)).group(1))
    ratio = float(re.fullmatch(r"compiled_over_eager_lamb=([0-9.]+)", lines[-1]).group(1))
    assert abs(ratio - compiled / eager) < 0.01 + 0.01 * ratio


def test_loader_benchmark_measures_every_strategy_and_prints_the_slowest(cpu_env):
    lines = _run("loader", "--ranks", "2", "--batch", "8", "--seq", "128", "--samples", "1024", "--shards", "2",
                 "--warmup", "2", "--batches", "4", env=cpu_env)
    rates = [float(m.group(1)) for line in lines if (m := re.match(r"  \S+ +([0-9]+) sequences per CPU second", line))]
    assert len(rates) == 5  # none, stratified, the two presorts, packed
    assert "(1.00x none;" in next(line for line in lines if line.startswith("  none "))  # measured, same run
    assert lines[-1] == f"loader_seq_per_s_per_rank={min(rates):.0f}"
