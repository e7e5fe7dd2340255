"""benchmarks/throughput.py end to end at toy sizes: both sides train, the results file keeps the rows it had
and gains this run's, the goals are read from the rows, the last line is the ratio. (A smoke run: the figures
themselves are measured on quiet machines, never in tests.)"""

import re
import subprocess
import sys

import pytest

from benchmarks.throughput import COLUMNS, goal_status, recorded_rows
from tests.helpers.repo import REPO

EARLIER = {**dict.fromkeys(COLUMNS, "x"), "date": "2026-01-02", "device": "cpu", "preset": "base",
           "speedup": "1.62", "machine": "quiet CPU", "load 1/5 min": "0.1/0.1 on 2 cores", "notes": "earlier run"}


def _row(cells: dict[str, str]) -> str:
    return "| " + " | ".join(cells[c] for c in COLUMNS) + " |"


def test_throughput_benchmark_runs_both_sides_and_records_a_row(small_dataset, tmp_path, cpu_env):
    pytest.importorskip("transformers", reason="transformers is in the test extra")
    results = tmp_path / "throughput_results.md"
    results.write_text(f"# throughput results\n\n```\n{_row(EARLIER)}\n```\n")
    cmd = [sys.executable, "-m", "benchmarks.throughput", "--preset", "tiny", "--data",
           str(small_dataset), "--batch-size", "4", "--batches", "2", "--warmup", "1", "--rounds", "2",
           "--steps", "1", "--threads", "1", "--peak-tflops", "1", "--results", str(results), "--note", "test"]
    proc = subprocess.run(cmd, cwd=REPO, env=cpu_env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    ratio = float(re.fullmatch(r"speedup_vs_transformers=([0-9.]+)", lines[-1]).group(1))
    ours = float(re.search(r"^ours: ([0-9.]+) sequences/s", proc.stdout, re.M).group(1))
    peer = float(re.search(r"^transformers: ([0-9.]+) sequences/s", proc.stdout, re.M).group(1))
    assert ratio == pytest.approx(ours / peer, rel=0.01)

    earlier, row = recorded_rows(results)
    assert earlier == EARLIER
    assert (row["device"], row["preset"], row["precision"], row["batch x seq"]) == ("cpu", "tiny", "bf16", "4 x 64")
    assert float(row["speedup"]) == pytest.approx(ratio, abs=0.01)
    assert float(row["ours seq/s"]) == pytest.approx(ours, abs=0.01) and row["peak TFLOP/s"] == "1.00"
    assert re.fullmatch(r"[0-9.]+/[0-9.]+ on \d+ cores", row["load 1/5 min"])
    assert "test; 2 rounds of 1 step(s), ratio " in row["notes"] and "; CPU-time ratio " in row["notes"]
    assert row["notes"].endswith("; peak given with --peak-tflops")
    text = results.read_text()
    assert "- command: python -m benchmarks.throughput --preset tiny" in text and "load average" in text
    # The tiny run is no evidence for either goal: the CPU goal is read from the earlier base row.
    assert "- CPU, base preset: at least 1.5x transformers: met, 1.62x on 2026-01-02 (quiet CPU" in text
    assert "NOT YET MEASURED. No H200 row is recorded: acceptance/gpu_check.sh has not been run on an H200" in text


def test_goal_status_reads_the_latest_matching_rows():
    slow = {**EARLIER, "date": "2026-02-03", "speedup": "1.21"}
    h200 = {**EARLIER, "device": "cuda", "preset": "large", "machine": "NVIDIA H200", "speedup": "2.30",
            "MFU ours": "47.0%"}
    cpu_line, gpu_line = goal_status([EARLIER, slow, h200])[1:]
    assert "NOT met, 1.21x on 2026-02-03" in cpu_line
    loaded = {**EARLIER, "notes": "UNDER LOAD (other processes used the cores); 4 rounds"}
    assert "met (measured under load: indicative only), 1.62x" in goal_status([loaded])[1]
    assert gpu_line.startswith("- H200, BERT-large seq 512 bf16: MFU 47.0% (goal 45%), 2.30x transformers (goal 2.0x)")
    assert "not yet measured" in goal_status([])[1]
