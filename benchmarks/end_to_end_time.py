"""`mlperf-bert simulate --system cpu_micro` against what cpu_micro runs take end to end (their RESULT seconds),
measured in this one run on this machine.

A CPU's figures hold only at the load they were measured at, and this machine is shared: so both sides are
measured here, minutes apart. First a calibration run (run_and_time.sh cpu_micro, seed 1): its timed region and
samples give the compute rate (`simulate --calibrate`), its RESULT seconds minus its timed region the start-up
(run.performance.startup_s). A site folder then holds a cpu_micro.json that refines the published one with those
two figures, and `mlperf-bert simulate --system cpu_micro` (MLPERF_BERT_SYSTEMS naming that folder) predicts a run
end to end (its predicted_end_to_end_s, with the descriptor's samples to converge). Then --runs measured runs
(other seeds) are compared with it, each and on average; goal: within 25%. The published descriptor's own
prediction (its figures measured on another day) is printed beside it.

    python -m benchmarks.end_to_end_time [--runs 3] [--no-results]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.common.results_file import add_no_results_flag, print_and_record
from benchmarks.default_system import log_figures

REPO = Path(__file__).resolve().parent.parent
SYSTEM = "cpu_micro"
GOAL = 0.25
_RESULT = re.compile(r"^RESULT,bert,(\d+),([\d.]+),", re.MULTILINE)


def _run(argv: list[str], env: dict[str, str]) -> str:
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


def measured_runs(env: dict[str, str], first_seed: int, runs: int, logs: Path) -> list[dict]:
    """`runs` runs of cpu_micro through run_and_time.sh: per run its seed, RESULT seconds, timed seconds, samples."""
    before = {p.name for p in (logs / SYSTEM).glob("result_*.txt")} if (logs / SYSTEM).is_dir() else set()
    out = _run(["bash", "run_and_time.sh", SYSTEM], {**env, "SEED": str(first_seed), "NEXP": str(runs)})
    results = [(int(seed), float(seconds)) for seed, seconds in _RESULT.findall(out)]
    made = sorted((p for p in (logs / SYSTEM).glob("result_*.txt") if p.name not in before),
                  key=lambda p: int(p.stem.split("_")[1]))
    rows = []
    for (seed, result_s), log in zip(results, made, strict=True):
        timed_s, samples, accuracy, status = log_figures(log)
        rows.append({"seed": seed, "result_s": result_s, "timed_s": timed_s, "samples": samples, "status": status})
    return rows


def simulate(env: dict[str, str], *options: str) -> tuple[dict[str, float], list[str]]:
    lines = _run([sys.executable, "-m", "bert.cli", "simulate", "--system", SYSTEM, *options], env).splitlines()
    figures = dict(line.split("=", 1) for line in lines if re.match(r"^[a-z_]+=[\d.]+$", line))
    return {key: float(value) for key, value in figures.items()}, lines


def calibrated_site(env: dict[str, str], run: dict, site: Path) -> dict[str, float]:
    """A site folder's cpu_micro.json refining the published one with the rate and start-up of `run`."""
    figures, _ = simulate(env, "--samples-to-converge", str(run["samples"]), "--calibrate", f"{run['timed_s']:.3f}")
    performance = {"gpu_samples_per_s": round(figures["calibrated_gpu_samples_per_s"], 1),
                   "startup_s": round(run["result_s"] - run["timed_s"], 1)}
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{SYSTEM}.json").write_text(json.dumps({"base": SYSTEM, "run": {"performance": performance}}, indent=2))
    return performance


def verdict(predicted: float, measured: float) -> str:
    ratio = predicted / measured
    return f"ratio {ratio:.2f}, {'within' if abs(ratio - 1) <= GOAL else 'OUTSIDE'} {GOAL:.0%}"


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_no_results_flag(parser)
    parser.add_argument("--runs", type=int, default=3, help="measured runs after the calibration run")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="end_to_end_") as scratch:
        root = Path(scratch)
        env = {**os.environ, "DATADIR": str(root / "data"), "LOGDIR": str(root / "logs")}
        env.setdefault("OMP_NUM_THREADS", "1")
        load_before = os.getloadavg()
        (calibration,) = measured_runs(env, 1, 1, root / "logs")
        published, _ = simulate(env)
        site_env = {**env, "MLPERF_BERT_SYSTEMS": str(root / "site")}
        performance = calibrated_site(env, calibration, root / "site")
        predicted, lines = simulate(site_env)
        runs = measured_runs(site_env, 101, args.runs, root / "logs")
    e2e = predicted["predicted_end_to_end_s"]
    mean = statistics.mean(r["result_s"] for r in runs)
    out = [f"load average before: {' / '.join(f'{x:.1f}' for x in load_before)} (1 / 5 / 15 min); the machine is "
           "shared with other work, so the calibration and the measured runs are made in this one run",
           f"calibration run (seed {calibration['seed']}): {calibration['status']} at {calibration['samples']:,} "
           f"samples, timed {calibration['timed_s']:.1f} s, RESULT {calibration['result_s']:.1f} s -> "
           f"run.performance {json.dumps(performance)}",
           f"simulate --system {SYSTEM} with those figures: predicted_end_to_end_s={e2e:.1f} "
           f"(time to train {predicted['predicted_time_to_train_s']:.1f} s)",
           f"the published descriptor's own figures predict {published['predicted_end_to_end_s']:.1f} s end to end",
           "measured runs:"]
    for r in runs:
        out.append(f"  seed {r['seed']}: {r['status']} at {r['samples']:,} samples, timed {r['timed_s']:.1f} s, "
                   f"RESULT {r['result_s']:.1f} s; predicted {e2e:.1f} s: {verdict(e2e, r['result_s'])}")
    out.append(f"mean RESULT {mean:.1f} s over {len(runs)} run(s); predicted {e2e:.1f} s: {verdict(e2e, mean)}")
    out += ["", *lines]
    print_and_record(Path(__file__).with_name("end_to_end_time_results.md"), out, args, argv)


if __name__ == "__main__":
    main(sys.argv[1:])
