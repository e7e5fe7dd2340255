"""benchmarks/throughput.py end to end at toy sizes: both sides train, the row is recorded, the last line
is the ratio. (A smoke run: the figures themselves are measured on quiet machines, never in tests.)"""

import re
import subprocess
import sys

import pytest

from tests.conftest import REPO


def test_throughput_benchmark_runs_both_sides_and_records_a_row(small_dataset, tmp_path, cpu_env):
    pytest.importorskip("transformers", reason="transformers is in the test extra")
    results = tmp_path / "results.md"
    cmd = [sys.executable, str(REPO / "benchmarks" / "throughput.py"), "--preset", "tiny", "--data",
           str(small_dataset), "--batch-size", "4", "--batches", "2", "--warmup", "1", "--rounds", "2",
           "--steps", "1", "--threads", "1", "--peak-tflops", "1", "--results", str(results), "--note", "test"]
    proc = subprocess.run(cmd, env=cpu_env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    ratio = float(re.fullmatch(r"speedup_vs_transformers=([0-9.]+)", lines[-1]).group(1))
    ours = float(re.search(r"^ours: ([0-9.]+) sequences/s", proc.stdout, re.M).group(1))
    peer = float(re.search(r"^transformers: ([0-9.]+) sequences/s", proc.stdout, re.M).group(1))
    assert ratio == pytest.approx(ours / peer, rel=0.01)
    rows = [line for line in results.read_text().splitlines() if line.startswith("| 20")]
    assert len(rows) == 1
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells[4:7] == ["tiny", "bf16", "4 x 64"] and float(cells[9]) == pytest.approx(ratio, abs=0.01)
    assert cells[-1].startswith("test; 2 rounds of 1 step(s), ratio ")
    assert cells[-1].endswith("; peak given with --peak-tflops")
