"""Training samples to reach the target: LAMB (the peer, the closed division's optimizer) against tuned ADAM
(ours, the seed paper's open-division choice), over the same seeds, each run launched as run_and_time.sh
launches it (torchrun with the descriptor's processes) and read from its MLPerf log.

    python -m benchmarks.optimizer_convergence                            # cpu_tiny vs cpu_tiny_adam, 5 seeds
    python -m benchmarks.optimizer_convergence --seeds 1 --max-samples 16384   # a quick check of the machinery

A run that stops at the sample cap counts as the cap (marked "capped"). The last line is
`adam_over_lamb_samples=<x>`, the ratio of the mean samples (below 1: ADAM needs fewer). Results (with date,
machine and torch version) go to benchmarks/optimizer_convergence_results.md.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.common.results_file import add_no_results_flag, write_results
from bert.system import Descriptor, load_descriptor
from compliance.result_log import read_result_log

RESULTS = Path(__file__).with_name("optimizer_convergence_results.md")


def capped_system(system: Descriptor, max_samples: int | None, folder: Path) -> Descriptor:
    """The descriptor itself, or a copy with a lower sample cap (for quick checks)."""
    if max_samples is None:
        return system
    return system.variant({"max_samples": max_samples}).write(folder)


def samples_to_target(system: Descriptor, seed: int, folder: Path, data_dir: Path) -> tuple[int, bool]:
    """(training samples at the stop, whether the target was reached) of one run."""
    log = folder / f"{system.name}_seed{seed}.txt"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc_per_node={system.run.processes_per_node}", "-m", "bert.cli", "train", "--system",
           str(system.path), "--seed", str(seed), "--log-file", str(log), "--data-dir", str(data_dir)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    result = read_result_log(log) if log.exists() else None
    stop = result.first("run_stop") if result is not None else None
    reason = stop.metadata.get("reason", "") if stop is not None else ""
    if stop is None or reason and "sample cap" not in reason:
        raise RuntimeError(f"{system.name} seed {seed} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return result.value("train_samples"), result.converged


def ensure_dataset(descriptor: Path) -> None:
    """Writes the synthetic corpus of the descriptor at `descriptor` to its dataset directory, unless it is there."""
    subprocess.run([sys.executable, "-m", "bert.cli", "data", "synth", "--system", str(descriptor), "--if-missing"],
                   check=True)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lamb-system", default="cpu_tiny")
    parser.add_argument("--adam-system", default="cpu_tiny_adam")
    parser.add_argument("--seeds", type=int, default=5, help="seeds 1..N for each optimizer")
    parser.add_argument("--max-samples", type=int, default=None, help="lower sample cap, for a quick check")
    add_no_results_flag(parser)
    args = parser.parse_args(argv)
    named = (("LAMB", load_descriptor(args.lamb_system)), ("ADAM", load_descriptor(args.adam_system)))
    for name, system in named:
        if system.run.optimizer.name != name.lower():
            raise SystemExit(f"{system.path}: run.optimizer.name is {system.run.optimizer.name!r}, "
                             f"not {name.lower()!r}")
    for _, system in named:
        ensure_dataset(system.path)
    data = {name: system.dataset_dir() for name, system in named}
    results: dict[str, list[tuple[int, bool]]] = {name: [] for name, _ in named}
    lines = [f"{'seed':>4}  " + "  ".join(f"{f'{name} ({system.name})':>24}" for name, system in named)]
    print(lines[0], flush=True)
    with tempfile.TemporaryDirectory(prefix="optimizer-convergence-") as tmp:
        systems = {name: capped_system(system, args.max_samples, Path(tmp)) for name, system in named}
        for seed in range(1, args.seeds + 1):
            for name, system in systems.items():
                results[name].append(samples_to_target(system, seed, Path(tmp), data[name]))
            cells = [f"{n}{'' if ok else ' capped'}" for n, ok in (results["LAMB"][-1], results["ADAM"][-1])]
            lines.append(f"{seed:>4}  {cells[0]:>24}  {cells[1]:>24}")
            print(lines[-1], flush=True)
    means = {name: statistics.mean(n for n, _ in runs) for name, runs in results.items()}
    reached = {name: sum(ok for _, ok in runs) for name, runs in results.items()}
    lines += [f"peer LAMB mean {means['LAMB']:.0f} samples ({reached['LAMB']}/{args.seeds} reached the target), "
              f"ours ADAM mean {means['ADAM']:.0f} samples ({reached['ADAM']}/{args.seeds} reached the target)",
              f"adam_over_lamb_samples={means['ADAM'] / means['LAMB']:.3f}"]
    print("\n".join(lines[-2:]))
    if not args.no_results:
        write_results(RESULTS, lines, argv)


if __name__ == "__main__":
    main(sys.argv[1:])
