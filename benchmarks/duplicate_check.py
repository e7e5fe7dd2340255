"""The duplicate check of `mlperf-bert data verify`: the duplicate rate the reference's own preprocessing makes on
real text (which sets the check's limit), and what the check costs per million samples and in memory, measured
on a synthetic corpus of at least a million samples and extrapolated to the MLPerf training set.

    python -m benchmarks.duplicate_check --wiki FILE... --dictd FILE.dict.dz... [--samples 1048576] [--tmp DIR]

Real text: each source is put in the reference layout (one sentence per line, a blank line between documents),
one document in 20 kept out as the eval text (as the reference's seperate_test_set.py keeps articles out), a
30,522-piece vocabulary learnt from it, and made into a dataset by `mlperf-bert data mlperf` with the
reference's flags (sequence 512, 76 predictions, dupe factor 10, seed 12345: the reference's samples, exactly);
the figures are those `data verify` records in the manifest. --wiki takes WikiExtractor output (the Wikipedia
sample of mlcommons/training, retired_benchmarks/bert/cleanup_scripts/sample_data/wiki_0*); --dictd a dictd
database (FOLDOC and the Jargon File: Debian's dict-foldoc and dict-jargon, /usr/share/dictd/*.dict.dz).

Cost: `mlperf-bert data synth`'s generator writes --samples samples (sequence 128, 32 shards) under --tmp; a
child process then runs the check alone, one process, a block of 8,192 samples at a time as verify reads them:
the fingerprint of every sample (CPU per million tokens), the packed set, its sort and the streaming pass (CPU
per million samples), with its peak memory beside that of a child that only reads the same blocks; and the
whole `data verify --workers 1` for the check's share of it. There is no peer to run: the reference pipeline
checks no duplicates (it checks the md5 of its text parts). Extrapolated to 156.7M samples of 254 tokens on
average (both quoted: the MLPerf set's count and the mean real length of its samples), the sort as n log n.
Results go to duplicate_check_results.md beside this file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common.data_commands import dictd_documents, run_child, run_data_command, wiki_layout
from benchmarks.common.results_file import add_no_results_flag, print_and_record

MLPERF_SAMPLES = 156_700_000  # quoted: the MLPerf training set
MLPERF_MEAN_TOKENS = 254  # quoted: the mean real length of its samples
SHORT = 16  # tokens: the samples whose ten passes can mask alike
EVAL_EVERY = 20
BLOCK = 8192


def _documents(args: argparse.Namespace, work: Path) -> dict[str, list[list[str]]]:
    sources = {}
    if args.wiki:
        wiki_layout(args.wiki, work / "wiki.txt")
        text = (work / "wiki.txt").read_text(encoding="utf-8")
        sources["Wikipedia sample (" + ", ".join(p.name for p in args.wiki) + ")"] = [
            d.splitlines() for d in text.split("\n\n") if d.strip()]
    for database in args.dictd or []:
        sources[database.name.removesuffix(".dict.dz")] = dictd_documents(database)
    return sources


def _download(documents: list[list[str]], root: Path, parts: int = 4) -> Path:
    """The layout of the MLCommons download: results4/part-*, results4/eval.txt, the md5 list, vocab.txt."""
    (root / "results4").mkdir(parents=True)
    kept = [d for i, d in enumerate(documents) if i % EVAL_EVERY != EVAL_EVERY - 1]
    held = [d for i, d in enumerate(documents) if i % EVAL_EVERY == EVAL_EVERY - 1]

    def write(path: Path, docs: list[list[str]]) -> None:
        path.write_text("\n\n".join("\n".join(d) for d in docs) + "\n", encoding="utf-8")
    for k in range(parts):
        write(root / "results4" / f"part-{k:05d}-of-{parts:05d}", kept[k::parts])
    write(root / "results4" / "eval.txt", held)
    listed = sorted((root / "results4").iterdir())
    (root / "bert_reference_results_text_md5.txt").write_text(
        "".join(f"{p.name}\t{hashlib.md5(p.read_bytes()).hexdigest()}\n" for p in listed))
    run_data_command(["vocab", "--text", str(root / "results4"), "--size", "30522", "--out", str(root / "vocab.txt")])
    return root


def _lengths(train: Path) -> tuple[float, float]:
    """(mean tokens per sample, share of samples of SHORT tokens or fewer) of the shards in `train`."""
    import h5py
    import numpy as np

    lengths = []
    for shard in sorted(train.glob("*.hdf5")):
        with h5py.File(shard, "r") as f:
            lengths.append(f["input_mask"][:].sum(1))
    every = np.concatenate(lengths)
    return float(every.mean()), float((every <= SHORT).mean())


def reference_rates(args: argparse.Namespace, work: Path) -> tuple[list[str], float]:
    lines, worst = [], 0.0
    for name, documents in _documents(args, work).items():
        folder = work / f"text-{len(lines)}"
        download = _download(documents, folder / "download")
        _, seconds, _ = run_data_command(["mlperf", str(download), "--out", str(folder / "data"), "--shards", "16",
                                          "--eval-samples", "1000"])
        checks = json.loads((folder / "data" / "manifest.json").read_text())["checks"]
        train = checks["duplicates"]["train/ (fixed form)"]
        overlap = checks["eval_in_train"]["eval.hdf5"]
        words = sum(len(s.split()) for d in documents for s in d)
        mean, short = _lengths(folder / "data" / "train")
        lines.append(f"{name}: {len(documents):,} documents, {words / 1e6:.2f}M words -> {train['samples']:,} samples "
                     f"({mean:.0f} tokens on average, {short:.2%} of {SHORT} or fewer), {train['copies']:,} copies: "
                     f"rate {train['rate']:.4%}; eval samples also in training {overlap['in_train']} of "
                     f"{overlap['samples']:,}; data mlperf {seconds:.0f} s")
        worst = max(worst, train["rate"], overlap["rate"])
        shutil.rmtree(folder)
    return lines, worst


def measure_check(train: Path, read_only: bool) -> dict:
    """In a child: the check alone over the shards of `train`, a block at a time (or only the reading)."""
    import numpy as np

    from bert.data.shards import read_shard, row_blocks, shard_header
    from bert.prep.duplicates import SampleSet, content_digest
    from bert.prep.sample_hashes import sample_hashes

    shards = sorted(train.glob("*.hdf5"))
    counts = [shard_header(p).samples for p in shards]
    sample_set = SampleSet("train/", shards, counts)
    figures = {"samples": sum(counts), "tokens": 0, "read_s": 0.0, "hash_s": 0.0, "set_s": 0.0, "copies": 0}
    for index, (shard, count) in enumerate(zip(shards, counts)):
        prints = []
        for rows in row_blocks(count, BLOCK):
            start = time.process_time()
            samples = read_shard(shard, rows)
            figures["read_s"] += time.process_time() - start
            figures["tokens"] += len(samples.tokens)
            if not read_only:
                start = time.process_time()
                prints.append(sample_hashes(samples))
                figures["hash_s"] += time.process_time() - start
        if not read_only:
            start = time.process_time()
            hashes = np.concatenate(prints)
            sample_set.add(index, hashes, content_digest(hashes))
            figures["set_s"] += time.process_time() - start
    if not read_only:
        start = time.process_time()
        figures["copies"] = sample_set.duplicates().copies
        figures["set_s"] += time.process_time() - start
    return figures


def cost(args: argparse.Namespace, work: Path) -> list[str]:
    data = work / "synthetic"
    spec = (f"SyntheticDataSpec(train_samples={args.samples}, eval_samples=1000, shards=32, max_seq_length=128, "
            "max_predictions=20)")
    made = run_child(["-c", f"from bert.prep.synthetic.hdf5_corpus import synthesize; from bert.data.settings "
                      f"import SyntheticDataSpec; synthesize({str(data)!r}, {spec})"], "data synth")
    check = run_child(["-m", "benchmarks.duplicate_check", "--measure", str(data / "train")], "the check")
    reading = run_child(["-m", "benchmarks.duplicate_check", "--measure", str(data / "train"), "--read-only"],
                        "reading")
    verify = run_child(["-m", "bert.cli", "data", "verify", str(data), "--workers", "1", "--quiet"], "data verify")
    f = json.loads(check.stdout)
    samples, tokens = f["samples"], f["tokens"]
    per_mtoken, per_msample = f["hash_s"] / tokens * 1e6, f["set_s"] / samples * 1e6
    own = f["hash_s"] + f["set_s"]
    growth = math.log2(MLPERF_SAMPLES) / math.log2(samples)
    hash_full = per_mtoken * MLPERF_SAMPLES * MLPERF_MEAN_TOKENS / 1e6
    set_full = per_msample * MLPERF_SAMPLES / 1e6 * growth
    keys_mib = 8 * MLPERF_SAMPLES / 2**20
    return [
        f"corpus: {samples:,} samples, {tokens / samples:.1f} tokens each on average, 32 shards (data synth's "
        f"generator, {made.seconds:.0f} s to write and verify)",
        f"the check, 1 process: fingerprints {f['hash_s']:.2f} s CPU ({per_mtoken:.3f} s per million tokens), set and "
        f"analysis {f['set_s']:.2f} s CPU ({per_msample:.3f} s per million samples); {own / samples * 1e6:.2f} s CPU "
        f"per million samples in all; {f['copies']} copies found",
        f"reading the same blocks: {f['read_s']:.2f} s CPU (not the check's: verify reads them anyway)",
        f"peak RSS: the check {check.peak_mib:,.0f} MiB, reading only {reading.peak_mib:,.0f} MiB: the check adds "
        f"{check.peak_mib - reading.peak_mib:,.0f} MiB ({8 * samples / 2**20:,.0f} MiB of it the 8 bytes per sample)",
        f"data verify --workers 1 (every check): {verify.cpu_seconds:.1f} s CPU, {verify.seconds:.1f} s wall, peak "
        f"{verify.peak_mib:,.0f} MiB; the duplicate check is {own / verify.cpu_seconds:.0%} of its CPU",
        f"extrapolated to {MLPERF_SAMPLES / 1e6:.1f}M samples x {MLPERF_MEAN_TOKENS} tokens (quoted): fingerprints "
        f"{hash_full / 60:.1f} min CPU (spread over verify's workers), sort and pass {set_full / 60:.1f} min CPU in "
        f"verify's main process (n log n: x{growth:.2f} per sample); memory {keys_mib:,.0f} MiB of fingerprints plus "
        "the blocks, per training set checked",
        f"duplicate_check_cpu_s_per_million_samples={own / samples * 1e6:.2f} duplicate_check_peak_mib="
        f"{check.peak_mib:.0f} extrapolated_main_process_mib={keys_mib + reading.peak_mib:.0f}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wiki", type=Path, nargs="+", help="WikiExtractor output files")
    parser.add_argument("--dictd", type=Path, nargs="+", help="dictd databases (NAME.dict.dz beside NAME.index)")
    parser.add_argument("--samples", type=int, default=1 << 20, help="samples of the synthetic corpus for the cost")
    parser.add_argument("--tmp", type=Path, default=None, help="where the temporary folder goes (about 1 GB)")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # the child's part
    parser.add_argument("--read-only", action="store_true", help=argparse.SUPPRESS)
    add_no_results_flag(parser)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure_check(args.measure, args.read_only)))
        return
    if not args.wiki and not args.dictd:
        parser.error("give real text: --wiki and/or --dictd")
    work = Path(tempfile.mkdtemp(prefix="duplicate-check-", dir=args.tmp))
    try:
        lines = cost(args, work)  # first: the measuring process is still small
        rates, worst = reference_rates(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    from bert.prep.duplicates import DUPLICATE_LIMIT

    lines = [*rates, f"the reference's highest rate here: {worst:.4%}; the check's limit {DUPLICATE_LIMIT:.0%} "
             f"({DUPLICATE_LIMIT / max(worst, 1e-12):.1f}x)", *lines]
    print_and_record(Path(__file__).with_name("duplicate_check_results.md"), lines, args, sys.argv[1:])


if __name__ == "__main__":
    main()
