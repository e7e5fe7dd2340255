"""acceptance/gpu_check.sh rehearsed on the CPU (GPU_CHECK_DEVICE=cpu): every stage of the check a GPU machine
runs passes at toy sizes, so that the script cannot drift from the descriptors, the CLI or the trainer."""

import json
import os
import re
import subprocess
import sys

import pytest

from tests.helpers.repo import REPO

GPU_CHECK = REPO / "acceptance" / "gpu_check.sh"
FILES = {"summary.md", "env.txt", "checks.log", "throughput.log", "throughput_results.md", "gpu_check.json",
         "train.log", "result_0.txt"}
STAGES = ("env", "descriptor", "data", "loader", "layer", "nosync", "cuda tests", "step", "throughput", "train",
          "nccl", "speed", "graphs")  # in the order they run: those that compile last


@pytest.mark.long_running
def test_the_gpu_check_rehearsal_passes_every_stage_on_the_cpu(tmp_path, cpu_env):
    out = tmp_path / "gpu_check"
    env = dict(cpu_env, GPU_CHECK_DEVICE="cpu", PYTHON=sys.executable)
    proc = subprocess.run([str(GPU_CHECK), str(out)], env=env, capture_output=True,
                          text=True, timeout=1200)
    summary = (out / "summary.md").read_text() if (out / "summary.md").exists() else proc.stdout
    assert proc.returncode == 0, summary + proc.stderr[-3000:]
    assert {p.name for p in out.iterdir()} == FILES  # all under OUTDIR, few enough to bring back
    verdicts = [line for line in summary.splitlines() if line.startswith("- ")]
    for name in STAGES:
        assert f"- {name}: ok in " in summary, summary
    ordered = [v.split(":")[0][2:] for v in verdicts if v.split(":")[0][2:] not in ("data", "loader")]
    assert ordered == [s for s in STAGES if s not in ("data", "loader")], verdicts  # those two run beside the rest
    assert "bf16: no host synchronisation in 2 steps" in summary and "fp16: no host synchronisation" in summary
    assert "layer output dtype torch.bfloat16" in summary and "nccl: ok" in summary
    assert "share matmul:" in summary and "peak resident memory" in summary
    assert "compiled_over_eager_layer=" in summary and "compiled_over_eager_lamb=" in summary
    assert "cuda_graphs_over_compiled_layer=" in summary
    assert "attention path of the training step" in summary and "sent in bf16" in summary
    assert "loader_seq_per_s_per_rank=" in summary
    assert "step of h200_1x1 as it trains (2 micro-batch(es) of 4, MLPerf length mix" in summary
    # The descriptor as published (compiled), eager and FP8 (torchao, emulated here), side by side, each with the
    # figures run.performance takes, none of them fallen back to eager.
    for form, what in (("default", "bf16, compiled layers, LAMB compiled"), ("eager", "bf16, eager layers, LAMB eager"),
                       ("fp8", "fp8, eager layers, LAMB compiled")):  # on a GPU the FP8 layers are compiled too
        assert re.search(rf"step\[{form}\] \({what}; compiled before the clock in [0-9.]+ s\): .*gpu_samples_per_s="
                         r"[0-9.]+ model_flops_utilization=[0-9.]+", summary), (form, summary)
    assert re.search(r"compiled_over_eager_step=[0-9.]+ fp8_over_bf16_step=[0-9.]+", summary), summary
    assert "run eager: compiling failed" not in (out / "checks.log").read_text()
    # The wheels a GPU machine without a registry needs, as the pip lines that make them.
    for spec in ("mlperf-logging==4.1.68", "torchao==0.18.0"):
        line = (r"python3 -m pip download --no-deps --only-binary=:all: --python-version 3\.12 --implementation cp "
                r"--platform manylinux_2_28_x86_64 .* -d \.whl ")
        assert re.search(line + re.escape(spec), summary), summary
    assert re.search(r"carried in \.whl/: \d+ wheel\(s\), \d+ KiB \(at most 40 MiB\)", summary), summary
    run = json.loads((out / "gpu_check.json").read_text())["run"]
    assert run["init_checkpoint"] is None and run["device"] == "cpu"  # the short run needs no phase-1 checkpoint
    assert (out / "result_0.txt").read_text().count('"key": "eval_accuracy"') == 2


def test_the_gpu_check_refuses_a_folder_that_holds_files(tmp_path):
    (tmp_path / "earlier.txt").write_text("kept")
    proc = subprocess.run([str(GPU_CHECK), str(tmp_path)], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, GPU_CHECK_DEVICE="cpu"))
    assert proc.returncode == 2 and "is not empty" in proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["earlier.txt"]


def test_a_failed_stage_is_one_line_of_the_summary_with_its_last_words(tmp_path, cpu_env):
    # A PYTHON that fails, and a budget so short that the stages after the first few are skipped: the env stage
    # fails, and its summary line says why in the stage's own last line.
    fails = tmp_path / "fails"
    fails.write_text("#!/bin/sh\necho 'this python is broken on purpose' >&2\nexit 3\n")
    fails.chmod(0o755)
    env = dict(cpu_env, GPU_CHECK_DEVICE="cpu", GPU_CHECK_BUDGET_S="25", PYTHON=str(fails))
    proc = subprocess.run([str(GPU_CHECK), str(tmp_path / "out")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    lines = [line for line in proc.stdout.splitlines() if line.startswith("- env:")]
    assert len(lines) == 1 and lines[0].startswith("- env: FAILED (exit 1) in ") and lines[0].endswith(
        "(log: env.txt): this python is broken on purpose"), lines
    assert "SKIPPED, the time budget is spent" in proc.stdout
