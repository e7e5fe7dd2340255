"""The data pipeline against the reference `create_pretraining_data.py`, side by side on the same text:
whether `data prepare` makes exactly the reference's samples, and how fast per core (exact, and the fast
sampler; the default fixed-length form, whose gzip costs about a third of the time, and the variable-length
form), then reshard throughput and memory.

    python -m benchmarks.data_pipeline --reference DIR [--wiki FILE... | --text FILE] [--megabytes 2] [--work DIR]
                                      [--repeat N]

DIR holds the reference's create_pretraining_data.py and tokenization.py (a checkout of google-research/bert or
mlcommons/training's bert cleanup_scripts); running it needs TensorFlow (`pip install -e .[tf]`). The text is
one part in the reference layout: `--text`, or `--wiki` WikiExtractor output (e.g. the sample_data/wiki_0*
files of mlcommons/training's cleanup_scripts: real Wikipedia text), put in that layout here (titles and tags
dropped, paragraphs cut into sentences at `. ! ?` before a capital), or by default synthetic text
(`mlperf-bert data synth-text`); cut to --megabytes at a document boundary. A vocabulary of 8,000 pieces is
learnt from it. Both run at sequence 512, 76 predictions, dupe factor 10, seed 12345, one process each; their
speed is samples per CPU second of the work itself (the reference's main after TensorFlow's import, our
worker's part), which other load on the machine moves much less than wall time, though still some (shared
caches): with `--repeat N` the reference and ours run back to back N times, and the CPU seconds and the ratios
are the medians of those rounds. `exact_match` compares every
array of every sample (the reference's TFRecord read by `data import`). Results go to
data_pipeline_results.md beside this file.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

# Neither loads torch: it is loaded only when write_results runs, after the measurements, because a child's peak
# RSS starts at its parent's (Linux keeps the high-water mark across fork and exec), so the measuring process must
# stay small.
from benchmarks.common.data_commands import run_data_command as _run
from benchmarks.common.data_commands import wiki_layout
from benchmarks.common.reference_peer import check_reference_dir, run_reference
from benchmarks.common.results_file import add_no_results_flag, write_results

SHAPE = ["--max-seq-length", "512", "--max-predictions", "76"]

WORK_MARK = ".data-pipeline-work"  # marks a --work folder as this benchmark's own


def _cut(source: Path, target: Path, megabytes: float) -> None:
    """The documents of `source` up to `megabytes` (whole documents)."""
    documents, size = [], 0
    for document in source.read_text(encoding="utf-8").split("\n\n"):
        if size >= megabytes * 1e6:
            break
        documents.append(document.strip("\n"))
        size += len(document.encode()) + 2
    target.write_text("\n\n".join(documents) + "\n", encoding="utf-8")


def _text(args: argparse.Namespace, work: Path) -> tuple[Path, str]:
    full = work / "full.txt"
    if args.text:
        shutil.copyfile(args.text, full)
        what = f"{args.text.name}"
    elif args.wiki:
        wiki_layout(args.wiki, full)
        what = f"Wikipedia text from {', '.join(p.name for p in args.wiki)}"
    else:
        _run(["synth-text", "--out", str(work / "synth"), "--megabytes", str(args.megabytes), "--parts", "1",
              "--eval-megabytes", "0", "--overwrite"])
        shutil.copyfile(next((work / "synth" / "train").glob("part-*")), full)
        what = "synthetic text (data synth-text)"
    part = work / "text" / "part.txt"
    part.parent.mkdir(exist_ok=True)
    _cut(full, part, args.megabytes)
    return part, what


def _prepared(out: str) -> tuple[int, float, float]:
    """(samples, CPU seconds of the worker, peak worker MiB) from prepare's summary line."""
    match = re.search(r"prepared \d+ part\(s\): ([\d,]+) samples .*; ([\d.]+) s of CPU in the workers\), peak "
                      r"worker memory ([\d,]+) MiB", out)
    if not match:
        raise SystemExit(f"unexpected prepare output: {out}")
    return int(match.group(1).replace(",", "")), float(match.group(2)), float(match.group(3).replace(",", ""))


def _prepare(part: Path, vocab: Path, out: Path, *extra: str) -> tuple[int, float, float, float]:
    """(samples, CPU seconds, wall seconds, peak worker MiB) of one worker preparing the part."""
    text, seconds, _ = _run(["prepare", "--text", str(part.parent), "--vocab", str(vocab), "--out", str(out), *SHAPE,
                             "--dupe-factor", "10", "--seed", "12345", "--workers", "1", "--overwrite", *extra])
    samples, cpu, peak = _prepared(text)
    return samples, cpu, seconds, peak


def _same_samples(reference_shard: Path, ours: Path) -> bool:
    from bert.data.shards import read_arrays

    _, want = read_arrays(reference_shard)
    _, got = read_arrays(ours)
    return all(np.array_equal(want[k], got[k]) for k in want)


def _round(script_dir: Path, part: Path, vocab: Path, work: Path) -> dict[str, tuple]:
    """The reference and each of ours, one after the other, so that their ratios see the same load."""
    records = work / "reference" / "part.tfrecord"
    records.parent.mkdir(exist_ok=True)
    return {"reference": run_reference(script_dir, part, vocab, records, 512, 76, 10),
            "exact": _prepare(part, vocab, work / "exact"),
            "varlen": _prepare(part, vocab, work / "exact_varlen", "--format", "varlen"),
            "fast": _prepare(part, vocab, work / "fast", "--fast")}


def measure(args: argparse.Namespace, work: Path) -> list[str]:
    script_dir = check_reference_dir(args.reference)
    part, what = _text(args, work)
    vocab = work / "vocab-8000.txt"
    _run(["vocab", "--text", str(part), "--size", "8000", "--out", str(vocab), "--overwrite"])
    rounds = [_round(script_dir, part, vocab, work) for _ in range(args.repeat)]
    _run(["import", "--input", str(work / "reference" / "part.tfrecord"), "--out", str(work / "imported"),
          "--overwrite"])
    match = _same_samples(work / "imported" / "part.hdf5", work / "exact" / "part.hdf5")

    def median(side: str, field: int) -> float:
        return statistics.median(r[side][field] for r in rounds)

    def ratios(side: str) -> list[float]:
        """Per round: (our samples per CPU second) / (the reference's)."""
        return [r[side][0] / r[side][1] / (r["exact"][0] / r["reference"][0]) for r in rounds]

    samples, fast_samples, ref_cpu = rounds[0]["exact"][0], rounds[0]["fast"][0], median("reference", 0)
    exact_cpu, varlen_cpu, fast_cpu = median("exact", 1), median("varlen", 1), median("fast", 1)
    of = f"median of {len(rounds)} rounds, " if len(rounds) > 1 else ""
    lines = [
        f"text: {part.stat().st_size / 1e6:.2f} MB of {what}; vocab 8000 pieces learnt from it",
        f"reference create_pretraining_data.py ({script_dir.name}), 1 process: {samples:,} samples in {ref_cpu:.2f} s "
        f"of CPU ({of}{median('reference', 1):.2f} s wall) = {samples / ref_cpu:,.0f} samples/s per core",
        f"ours exact (data prepare), 1 worker: {samples:,} samples in {exact_cpu:.2f} s of CPU ({of}"
        f"{median('exact', 2):.2f} s wall with start-up) = {samples / exact_cpu:,.0f} samples/s per core, peak worker "
        f"RSS {median('exact', 3):,.0f} MiB",
        f"ours exact, variable-length form (--format varlen: no gzip), 1 worker: {samples:,} samples in "
        f"{varlen_cpu:.2f} s of CPU = {samples / varlen_cpu:,.0f} samples/s per core",
        f"ours fast (data prepare --fast), 1 worker: {fast_samples:,} samples in {fast_cpu:.2f} s of CPU = "
        f"{fast_samples / fast_cpu:,.0f} samples/s per core, peak worker RSS {median('fast', 3):,.0f} MiB",
        f"every array of every sample equal to the reference's: {match}",
    ]
    if len(rounds) > 1:  # the ratios below pair each round's sides (run back to back), not the medians above
        per_round = zip(ratios("exact"), ratios("varlen"), ratios("fast"))
        lines.append("per round, ratio to the reference (exact, varlen, fast; the ratios below are their medians): "
                     + "; ".join(f"{e:.2f}, {v:.2f}, {f:.2f}" for e, v, f in per_round))
    shards = [work / "exact" / "part.hdf5"]
    double = work / "double"
    shutil.rmtree(double, ignore_errors=True)
    double.mkdir()
    for copy in range(2):
        os.link(shards[0], double / f"copy{copy}.hdf5")
    _, single_s, single_peak = _run(["reshard", "--input", *map(str, shards), "--out", str(work / "r1"), "--shards",
                                     "4", *SHAPE, "--workers", "1", "--overwrite"])
    _, double_s, double_peak = _run(["reshard", "--input", str(double), "--out", str(work / "r2"), "--shards", "8",
                                     *SHAPE, "--workers", "1", "--overwrite"])
    lines += [
        f"reshard 1x, 1 worker: {samples:,} samples -> 4 shards in {single_s:.1f} s wall, peak RSS "
        f"{single_peak:,.0f} MiB",
        f"reshard 2x, 1 worker: {2 * samples:,} samples -> 8 shards in {double_s:.1f} s wall, peak RSS "
        f"{double_peak:,.0f} MiB (same shard sizes; memory ratio 2x/1x {double_peak / single_peak:.2f})",
        f"exact_match={str(match).lower()} exact_ratio_to_reference={statistics.median(ratios('exact')):.2f} "
        f"exact_varlen_ratio_to_reference={statistics.median(ratios('varlen')):.2f} "
        f"fast_ratio_to_reference={statistics.median(ratios('fast')):.2f}",
    ]
    return lines


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        tensorflow = version("tensorflow-cpu")
    except PackageNotFoundError:
        tensorflow = version("tensorflow")
    return (f", python {platform.python_version()}, tensorflow {tensorflow} (the reference's), "
            f"h5py {version('h5py')}, numpy {version('numpy')}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", type=Path, required=True, help="folder of the reference scripts")
    parser.add_argument("--text", type=Path, help="a text part in the reference layout")
    parser.add_argument("--wiki", type=Path, nargs="+", help="WikiExtractor output files")
    parser.add_argument("--megabytes", type=float, default=2.0, help="text to use (whole documents)")
    parser.add_argument("--work", type=Path, default=None, help="working folder (kept; default: a temporary one)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of the speed runs (the reference and ours, "
                        "back to back); CPU seconds and ratios are their medians")
    add_no_results_flag(parser)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="data-pipeline-"))
    # The benchmark replaces what it wrote in its work folder (shards, copies, resharded output): a folder it
    # did not make is refused rather than written into.
    if work.is_dir() and any(work.iterdir()) and not (work / WORK_MARK).is_file():
        parser.error(f"--work {work}: not empty and not a folder of this benchmark (no {WORK_MARK}); give a new "
                     "or empty folder")
    work.mkdir(parents=True, exist_ok=True)
    (work / WORK_MARK).touch()
    try:
        lines = measure(args, work)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print("\n".join(lines))
    if not args.no_results:
        write_results(Path(__file__).with_name("data_pipeline_results.md"), lines, sys.argv[1:], _versions())


if __name__ == "__main__":
    main()
