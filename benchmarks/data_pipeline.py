"""The data pipeline against the reference `create_pretraining_data.py`: prepare samples/s per core and on all
cores, peak memory per worker, reshard throughput and peak memory (at one and at two times the data).

    python benchmarks/data_pipeline.py [--megabytes 54] [--parts 2] [--workers N] [--work DIR]

It writes a synthetic text corpus (`mlperf-bert data synth-text`; the default is two 27 MB parts, the size of
an MLPerf Wikipedia part), learns an 8,000-piece vocabulary from it, prepares it as the MLPerf runs do
(sequence 512, 76 predictions, dupe factor 10, seed 12345) with one worker and with all workers, then
reshards the result. Every step runs as its own `mlperf-bert data` process; its peak memory is read from
the kernel when it exits (wait4), and prepare also reports the peak of its workers. The reference figure is
quoted from the issue: the TensorFlow script, one process, about 525 samples/s on one core of this kind of
machine (sequence 512, dupe factor 10, an 8,000-piece vocabulary, 2 MB of English text), 700 MB peak RSS
growing with the input. Results go to data_pipeline_results.md beside this file.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REFERENCE_SAMPLES_PER_S = 525.0  # create_pretraining_data.py, one process, one core (from the issue)
REFERENCE_PEAK_MB = 700.0
SHAPE = ["--max-seq-length", "512", "--max-predictions", "76"]


def _run(args: list[str]) -> tuple[str, float, float]:
    """Runs `mlperf-bert data ARGS --quiet`; returns (stdout, wall seconds, peak RSS in MiB of the command and
    its workers). The child is reaped with wait4, which reports its peak memory."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "bert.cli", "data", *args, "--quiet"], stdout=out, stderr=err,
                                text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if proc.returncode:
            raise SystemExit(f"mlperf-bert data {' '.join(args)} failed:\n{err.read()[-3000:]}")
        return out.read(), seconds, usage.ru_maxrss / 1024


def _prepared(out: str) -> tuple[int, float]:
    """(samples, peak worker MiB) from prepare's summary line."""
    match = re.search(r"prepared \d+ part\(s\): ([\d,]+) samples .* peak worker memory ([\d,]+) MiB", out)
    if not match:
        raise SystemExit(f"unexpected prepare output: {out}")
    return int(match.group(1).replace(",", "")), float(match.group(2).replace(",", ""))


def _corpus(work: Path, megabytes: float, parts: int) -> Path:
    text = work / f"text-{megabytes:g}MB-{parts}parts"
    if not (text / "train").is_dir():
        _run(["synth-text", "--out", str(text), "--megabytes", str(megabytes), "--parts", str(parts),
                  "--eval-megabytes", "0", "--overwrite"])
    return text


def _prepare(text: Path, vocab: Path, out: Path, workers: int) -> tuple[int, float, float, float]:
    """(samples, seconds, peak worker MiB, peak MiB of the whole command)."""
    out_text, seconds, peak = _run(["prepare", "--text", str(text / "train"), "--vocab", str(vocab),
                                        "--out", str(out), *SHAPE, "--dupe-factor", "10", "--seed", "12345",
                                        "--workers", str(workers), "--overwrite"])
    samples, worker_peak = _prepared(out_text)
    return samples, seconds, worker_peak, peak


def _reshard(inputs: list[Path], out: Path, shards: int, workers: int) -> tuple[float, float]:
    _, seconds, peak = _run(["reshard", "--input", *map(str, inputs), "--out", str(out), "--shards", str(shards),
                             *SHAPE, "--workers", str(workers), "--overwrite"])
    return seconds, peak


def measure(work: Path, megabytes: float, parts: int, workers: int) -> list[str]:
    lines = []
    text = _corpus(work, megabytes, parts)
    size_mb = sum(p.stat().st_size for p in (text / "train").iterdir()) / 1e6
    vocab = work / "vocab-8000.txt"
    _, vocab_s, _ = _run(["vocab", "--text", str(text / "train"), "--size", "8000", "--out", str(vocab),
                              "--overwrite"])
    lines.append(f"corpus: {size_mb:.1f} MB of synthetic text in {parts} part(s); vocab (8000 pieces) learnt in "
                 f"{vocab_s:.1f} s")
    one = _prepare(text, vocab, work / "prepared-1", 1)
    everyone = _prepare(text, vocab, work / f"prepared-{workers}", workers)
    per_core = one[0] / one[1]
    used = min(workers, parts)
    lines += [
        f"prepare, 1 worker: {one[0]:,} samples in {one[1]:.1f} s = {per_core:,.0f} samples/s; "
        f"peak worker RSS {one[2]:,.0f} MiB",
        f"prepare, {used} worker(s): {everyone[0]:,} samples in {everyone[1]:.1f} s = "
        f"{everyone[0] / everyone[1]:,.0f} samples/s; scaling {everyone[0] / everyone[1] / per_core / used:.2f} "
        f"of linear; peak worker RSS {everyone[2]:,.0f} MiB, whole command {everyone[3]:,.0f} MiB",
        f"peer (create_pretraining_data.py, 1 core): {REFERENCE_SAMPLES_PER_S:,.0f} samples/s, "
        f"{REFERENCE_PEAK_MB:,.0f} MiB peak",
        f"ours (1 worker): {per_core:,.0f} samples/s, {one[2]:,.0f} MiB peak; "
        f"ratio {per_core / REFERENCE_SAMPLES_PER_S:.1f}x samples/s per core",
    ]
    shards = sorted((work / "prepared-1").glob("*.hdf5"))
    double = work / "double"
    shutil.rmtree(double, ignore_errors=True)
    double.mkdir()
    for copy in range(2):
        for p in shards:
            os.link(p, double / f"copy{copy}-{p.name}")
    single_s, single_peak = _reshard(shards, work / "resharded-1x", 4 * len(shards), 1)
    double_s, double_peak = _reshard(sorted(double.iterdir()), work / "resharded-2x", 8 * len(shards), 1)
    wide_s, wide_peak = _reshard(shards, work / f"resharded-1x-{workers}", 4 * len(shards), workers)
    lines += [
        f"reshard 1x, 1 worker: {one[0]:,} samples -> {4 * len(shards)} shards in {single_s:.1f} s = "
        f"{one[0] / single_s:,.0f} samples/s, peak RSS {single_peak:,.0f} MiB",
        f"reshard 2x, 1 worker: {2 * one[0]:,} samples -> {8 * len(shards)} shards in {double_s:.1f} s = "
        f"{2 * one[0] / double_s:,.0f} samples/s, peak RSS {double_peak:,.0f} MiB "
        f"(same shard sizes; memory ratio 2x/1x {double_peak / single_peak:.2f})",
        f"reshard 1x, {workers} workers (second pass): {wide_s:.1f} s = {one[0] / wide_s:,.0f} samples/s, "
        f"peak RSS of any process {wide_peak:,.0f} MiB",
        f"prepare_samples_per_s_per_core={per_core:.0f} ratio_to_reference={per_core / REFERENCE_SAMPLES_PER_S:.2f}",
    ]
    return lines


def _versions() -> str:
    import h5py
    import numpy
    import tokenizers

    return (f", python {platform.python_version()}, tokenizers {tokenizers.__version__}, h5py {h5py.__version__}, "
            f"numpy {numpy.__version__}")


def main() -> None:
    from results_file import add_no_results_flag  # beside this script

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=float, default=54.0, help="training text (at least 50 MB)")
    parser.add_argument("--parts", type=int, default=2, help="text parts (27 MB each is MLPerf-sized)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="workers of the parallel run")
    parser.add_argument("--work", type=Path, default=None, help="working folder (kept; default: a temporary one)")
    add_no_results_flag(parser)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="data-pipeline-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        lines = measure(work, args.megabytes, args.parts, args.workers)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print("\n".join(lines))
    if not args.no_results:
        # Imported only now: it loads torch, and a child's peak RSS starts at its parent's (Linux keeps the
        # high-water mark across fork and exec), so the measuring process must stay small.
        from results_file import write_results

        write_results(Path(__file__).with_name("data_pipeline_results.md"), lines, sys.argv[1:], _versions())


if __name__ == "__main__":
    main()
