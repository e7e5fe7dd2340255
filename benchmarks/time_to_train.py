"""`mlperf-bert simulate` against published MLPerf BERT results: predicted / published time to train.

Each prediction is the command's own output (its last line, predicted_time_to_train_s) for the descriptor
in systems/, whose run.performance.gpu_samples_per_s is a published single-node figure (the descriptor's
notes say which). Goal: every ratio within 25% of 1. For the multi-node systems it also prints the prediction
with the other inter-node allreduce algorithm (ring <-> tree): where a submission does not say which one NCCL
ran, that line shows how much the prediction depends on it.

    python -m benchmarks.time_to_train [--no-results]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common.results_file import add_no_results_flag, print_and_record
from bert.system import System, load_system

# Published times to train: the MLPerf Training results of the rounds named (v2.0, v2.1).
PUBLISHED = [
    ("dgxa100_1x8", "NVIDIA v2.1 DGX A100 1x8 (closed)", 16.9 * 60),
    ("dgxa100_512x8_packed", "NVIDIA v2.0 DGX A100 512x8, packed (closed)", 12.3),
    ("dgxa100_128x8_adam", "seed paper, Samsung v2.0 DGX A100 128x8, ADAM (open)", 22.3),
]
GOAL = 0.25
SOURCE = ("per-GPU throughput: 314 sequences/s per A100 = NVIDIA v2.1 DGX A100 1x8 (16.9 min): 2,550,000 samples "
          "(the first eval at or past the GBS-448 reference convergence mean) / 1014 s / 8 GPUs, eval included")


def predicted_seconds(system: str) -> tuple[float, list[str]]:
    from click.testing import CliRunner

    from bert.cli import main

    result = CliRunner().invoke(main, ["simulate", "--system", system])
    if result.exit_code != 0:
        raise SystemExit(f"mlperf-bert simulate --system {system} failed:\n{result.output}")
    lines = result.output.splitlines()
    return float(lines[-1].split("=", 1)[1]), lines


def other_algorithm_line(system: System) -> str | None:
    """The prediction for `system` with the other inter-node allreduce algorithm; None on a single node."""
    if system.nodes == 1:
        return None
    declared = system.run.performance.allreduce
    other = "tree" if declared == "ring" else "ring"
    with tempfile.TemporaryDirectory() as tmp:
        variant = system.variant({"performance.allreduce": other}, name=f"{system.name}_{other}").write(tmp)
        seconds, _ = predicted_seconds(str(variant.path))
    return f"  {system.name}: allreduce {declared} as declared; with {other} instead the prediction would be " \
           f"{seconds:.1f} s"


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_no_results_flag(parser)
    args = parser.parse_args(argv)
    rows, details, algorithms = [], [], []
    started = time.perf_counter()
    for name, label, published in PUBLISHED:
        predicted, lines = predicted_seconds(name)
        system = load_system(name)
        per_gpu = system.run.performance.gpu_samples_per_s
        ratio = predicted / published
        rows.append(f"{label:<56} published {published:8.1f} s  predicted {predicted:8.1f} s  "
                    f"ratio {ratio:5.2f}  {'within' if abs(ratio - 1) <= GOAL else 'OUTSIDE'} 25%  "
                    f"({per_gpu:g} seq/s per GPU)")
        details += ["", *lines]
        line = other_algorithm_line(system)
        if line:
            algorithms.append(line)
    elapsed = time.perf_counter() - started
    out = [*rows, "", "inter-node allreduce algorithm:", *algorithms, "", SOURCE,
           f"simulate time for the three: {elapsed:.1f} s", *details]
    print_and_record(Path(__file__).with_name("time_to_train_results.md"), out, args, argv)


if __name__ == "__main__":
    main(sys.argv[1:])
