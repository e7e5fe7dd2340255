"""`mlperf-bert simulate` against times to train: the figures its rates were calibrated on, published results it
predicts from them, and a real run of cpu_tiny made in this run.

Each prediction is the command's own output (its last line, predicted_time_to_train_s). Goals: each calibration
point within 5% (bert.simulate.time_to_train.CALIBRATION_TOLERANCE; a test holds it too), each other published
result within 25%, and the real cpu_tiny run: its timed region (run_start to run_stop, from its log) against the
prediction with the descriptor's declared samples to converge and with the run's own. The published figures are
quoted from the MLPerf Training results of the rounds named; the cpu_tiny run is measured here, so it shows how
well the CPU calibration (made on a loaded machine, see systems/cpu_tiny.json) holds on this one now. For the
multi-node systems it also prints the prediction with the other inter-node allreduce algorithm (ring <-> tree).

    python -m benchmarks.time_to_train [--no-results] [--seed S]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common.results_file import add_no_results_flag, print_and_record
from benchmarks.default_system import log_figures, timed
from bert.simulate.time_to_train import CALIBRATION_POINTS, CALIBRATION_TOLERANCE
from bert.system import Descriptor, load_descriptor

# Published results predicted from the calibrated A100 rate (quoted: MLPerf Training v2.0 and v2.1).
PREDICTED = [
    ("dgxa100_8x8", "NVIDIA v2.1 DGX A100 8x8 (closed)", 2.5 * 60),
    ("dgxa100_512x8_packed", "NVIDIA v2.0 DGX A100 512x8, packed (closed)", 12.3),
    ("dgxa100_128x8_adam", "seed paper, Samsung v2.0 DGX A100 128x8, ADAM (open)", 22.3),
]
GOAL = 0.25
CPU_SYSTEM = "cpu_tiny"


def predicted_seconds(system: str, *options: str) -> tuple[float, list[str]]:
    from click.testing import CliRunner

    from bert.cli import main

    result = CliRunner().invoke(main, ["simulate", "--system", system, *options])
    if result.exit_code != 0:
        raise SystemExit(f"mlperf-bert simulate --system {system} failed:\n{result.output}")
    lines = result.output.splitlines()
    return float(lines[-1].split("=", 1)[1]), lines


def other_algorithm_line(system: Descriptor) -> str | None:
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


def row(label: str, reference: str, seconds: float, predicted: float, goal: float) -> str:
    ratio = predicted / seconds
    return (f"{label:<58} {reference} {seconds:8.1f} s  predicted {predicted:8.1f} s  ratio {ratio:5.2f}  "
            f"{'within' if abs(ratio - 1) <= goal else 'OUTSIDE'} {goal:.0%}")


def real_cpu_run(seed: int) -> tuple[list[str], list[str]]:
    """cpu_tiny through run_and_time.sh in a scratch folder (its own corpus and log), against the predictions."""
    with tempfile.TemporaryDirectory(prefix="time_to_train_") as scratch:
        env = {**os.environ, "DATADIR": f"{scratch}/data", "LOGDIR": f"{scratch}/logs", "SEED": str(seed)}
        env.setdefault("OMP_NUM_THREADS", "1")
        whole_s, _ = timed(["bash", "run_and_time.sh", CPU_SYSTEM], env)
        run_s, samples, accuracy, status = log_figures(Path(scratch) / "logs" / CPU_SYSTEM / "result_0.txt")
    declared, _ = predicted_seconds(CPU_SYSTEM)
    own, lines = predicted_seconds(CPU_SYSTEM, "--samples-to-converge", str(samples))
    said = (f"{CPU_SYSTEM} run here (seed {seed}): {status} at {samples:,} samples (accuracy {accuracy:.4f}), timed "
            f"{run_s:.1f} s, whole command {whole_s:.1f} s")
    rows = [row(f"{CPU_SYSTEM}, declared samples to converge", "measured", run_s, declared, GOAL),
            row(f"{CPU_SYSTEM}, the run's own {samples:,} samples", "measured", run_s, own, GOAL)]
    return [said, *rows], lines


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_no_results_flag(parser)
    parser.add_argument("--seed", type=int, default=1, help="the seed of the cpu_tiny run")
    args = parser.parse_args(argv)
    rows, details, algorithms = ["calibration points:"], [], []
    started = time.perf_counter()
    for point in CALIBRATION_POINTS:
        predicted, lines = predicted_seconds(point.system)
        rows.append(row(f"  {point.system}", "calibrated on", point.seconds, predicted, CALIBRATION_TOLERANCE))
        rows.append(f"    ({point.source})")
        details += ["", *lines]
    rows.append("published results predicted from the calibrated A100 rate (quoted):")
    for name, label, published in PREDICTED:
        predicted, lines = predicted_seconds(name)
        rows.append(row(f"  {label}", "published", published, predicted, GOAL))
        details += ["", *lines]
        line = other_algorithm_line(load_descriptor(name))
        if line:
            algorithms.append(line)
    simulated = time.perf_counter() - started
    measured, cpu_lines = real_cpu_run(args.seed)
    out = [*rows, "a real run, measured here:", *(f"  {line}" for line in measured), "",
           "inter-node allreduce algorithm:", *algorithms, "", f"simulate time for the published systems: "
           f"{simulated:.1f} s", *details, "", *cpu_lines]
    print_and_record(Path(__file__).with_name("time_to_train_results.md"), out, args, argv)


if __name__ == "__main__":
    main(sys.argv[1:])
