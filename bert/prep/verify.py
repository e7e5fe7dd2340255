"""`mlperf-bert data verify DIR`: check every shard of a dataset directory, summarise it, write its manifest.

Each shard is checked on its own (bert.prep.shard_check: its form, and every sample a reference sample).
Then the dataset-wide checks: exact duplicate samples in each training set (bert.prep.duplicates), eval samples
that also occur in training and whether the eval file is the reference's pick of its source
(bert.prep.eval_checks), and whether the token ids fit the vocabulary (bert.prep.vocab_fit).
Problems are reported one line each, naming the file and the first sample concerned. The manifest records per
shard what was proved (the largest token id, the longest sample, the most masked positions), the checks with
their figures, and the problems: training starts only on a manifest that records every check and no problem.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from bert.data.manifest import (
    MANIFEST_FILE,
    Manifest,
    ManifestEntry,
    load_manifest,
    sha256_of,
    shard_files,
    write_manifest,
)
from bert.data.shards import ShardError, shard_file, shard_header
from bert.data.vocab import Vocab, load_vocab
from bert.ownership import VERIFY, claim_file
from bert.prep.duplicates import SampleSet, content_digest, judge_duplicates
from bert.prep.eval_checks import (
    EvalOverlap,
    default_eval_files,
    judge_overlap,
    judge_pick,
    recorded_source,
    source_hashes,
)
from bert.prep.progress import Advance, progress_bar
from bert.prep.shard_check import NO_LIMITS, Limits, ShardCheck, Stats, verify_shard
from bert.prep.vocab_fit import judge_vocabulary, piece_kinds
from bert.prep.worker_pool import run_parallel


@dataclass
class VerifyReport:
    root: Path
    entries: list[ManifestEntry]
    problems: list[str]
    stats: Stats  # of the training shards
    limits: Limits
    manifest: Path | None = None
    checks: dict = field(default_factory=dict)  # the dataset-wide checks' figures, as the manifest records them
    check_lines: list[str] = field(default_factory=list)  # their summary
    eval_stats: Stats = field(default_factory=Stats)  # of the eval files, which are no training data
    sets: dict[str, TrainingSet] = field(default_factory=dict)  # the training sets (_training_sets) by name

    def all_stats(self) -> Stats:
        """The statistics of every sample checked, eval files included."""
        everything = Stats()
        everything.add(self.stats)
        everything.add(self.eval_stats)
        return everything


@dataclass
class TrainingSet:
    """The shards of one form in one top folder (train/, train_varlen/): what a summary counts once."""

    shards: int = 0
    stats: Stats = field(default_factory=Stats)
    forms: set[str] = field(default_factory=set)

    def same_samples_as(self, other: TrainingSet) -> bool:
        """Whether the two sets hold the same samples by every figure counted (the forms of one dataset)."""
        a, b = self.stats, other.stats
        return (self.shards, a.samples, a.masked, a.random_next, a.max_id) == \
            (other.shards, b.samples, b.masked, b.random_next, b.max_id) and np.array_equal(a.length_counts,
                                                                                            b.length_counts)


def verify_dataset(root: Path, vocab_path: Path | None = None, limits: Limits = NO_LIMITS, workers: int = 1,
                   show_progress: bool = True, writer: str = VERIFY, eval_files: list[Path] | None = None,
                   eval_source: Path | None = None) -> VerifyReport:
    """Checks every shard below `root` and the eval files (root's eval*.hdf5 and `eval_files`) on `workers` processes,
    then the dataset-wide checks (the eval pick against `eval_source`, or the source `data mlperf` recorded);
    writes root/manifest.json recording them and every problem (claimed for `writer`: a manifest.json of someone
    else's is never replaced)."""
    if not root.is_dir():
        raise ShardError(f"{root}: no such dataset directory")
    vocab_path = vocab_path or root / "vocab.txt"
    if not vocab_path.is_file():
        raise ShardError(f"{vocab_path}: no vocabulary to check token ids against; pass --vocab")
    vocab = load_vocab(vocab_path)
    files = [shard_file(path) for path in shard_files(root)]  # a FIFO or a device among them: refused here
    evals = default_eval_files(root, files)
    named = {p.resolve() for p in evals}
    for path in eval_files or []:
        if not path.is_file():
            raise ShardError(f"{path}: no such eval file")
        if path.resolve() not in named:
            evals.append(path)
            named.add(path.resolve())
    training = [p for p in files if p.resolve() not in named]
    if not training:
        raise ShardError(f"{root}: no training shards (*.hdf5 other than the eval files) in it or below it")
    report = VerifyReport(root, [], [], Stats(), limits)
    check = _FileCheck(root, vocab, limits, piece_kinds(vocab))
    with progress_bar("verify", sum(p.stat().st_size for p in [*evals, *training]), "bytes", show_progress) as advance:
        checked = dict(zip(evals, _check_files(report, check, evals, "eval", workers, advance)))
        prints = {path: result.hashes for path, result in checked.items()}
        overlaps = {path: EvalOverlap(len(hashes)) for path, hashes in prints.items()}
        for sample_set in _training_sets(root, training):
            _check_files(report, check, sample_set.paths, "train", workers, advance, sample_set)
            _record(report, "duplicates", sample_set.name, judge_duplicates(sample_set, sample_set.duplicates(), root))
            for path, hashes in prints.items():
                overlaps[path].update(sample_set, hashes)
    structural = len(report.problems)
    everything = report.all_stats()
    report.checks["samples"] = {"shards": len(report.entries), "samples": everything.samples, "problems": structural}
    _eval_checks(report, checked, overlaps, eval_source or recorded_source(root))
    _record(report, "vocabulary", None, judge_vocabulary(everything.kinds, str(vocab_path)))
    report.entries.sort(key=lambda e: e.path)
    report.entries.append(ManifestEntry(_relative(vocab_path, root), vocab_path.stat().st_size, sha256_of(vocab_path),
                                        None, "vocab"))
    with claim_file(root / MANIFEST_FILE, writer, replace=True, legacy=_is_manifest,
                    foreign_hint="verify writes its manifest there: move that file away yourself"):
        report.manifest = write_manifest(root, Manifest(report.entries, report.checks, report.problems))
    return report


def _check_files(report: VerifyReport, check: _FileCheck, paths: list[Path], role: str, workers: int,
                 advance: Advance, sample_set: SampleSet | None = None) -> list[ShardCheck]:
    """Checks the shards, adding their entries (with `role`), statistics and problems to the report, and their
    fingerprints to `sample_set` as each arrives (then dropped: memory stays one fingerprint per sample)."""
    def fold(index: int, result: ShardCheck) -> ShardCheck:
        report.entries.append(replace(result.entry, role=role))
        (report.eval_stats if role == "eval" else report.stats).add(result.stats)
        report.problems += result.problems
        if sample_set is not None:
            counted = report.sets.setdefault(sample_set.name, TrainingSet())
            counted.shards += 1
            counted.stats.add(result.stats)
            counted.forms.add(result.form)
            sample_set.add(index, result.hashes, result.digest)
            result.hashes = np.zeros(0, dtype=np.uint64)
        return result
    return run_parallel(check, paths, workers, advance, keep=fold)


def _training_sets(root: Path, shards: list[Path]) -> list[SampleSet]:
    """The training sets to check for duplicates: the shards of one form in one top folder (train/ and
    train_varlen/ of `data mlperf` hold the same samples twice, by design)."""
    groups: dict[str, tuple[list[Path], list[int]]] = {}
    for path in shards:
        try:
            header = shard_header(path)
            form, samples = header.form, header.samples
        except ShardError:  # reported when the shard is checked
            form, samples = "unreadable", 0
        parts = path.relative_to(root).parts
        name = f"{parts[0]}/ ({form} form)" if len(parts) > 1 else f"the top folder ({form} form)"
        paths, counts = groups.setdefault(name, ([], []))
        paths.append(path)
        counts.append(samples)
    return [SampleSet(name, paths, counts) for name, (paths, counts) in groups.items()]


def _eval_checks(report: VerifyReport, checked: dict[Path, ShardCheck], overlaps: dict[Path, EvalOverlap],
                 source: Path | None) -> None:
    report.checks["eval_in_train"], report.checks["eval_pick"] = {}, {}
    if not checked:
        report.check_lines.append(f"eval: no eval file checked (none named eval*.hdf5 at the top of {report.root}); "
                                  "name it with --eval")
        return
    source_prints = None
    if source is not None:
        try:
            source_prints = source_hashes(source)
        except ShardError as e:
            report.problems.append(str(e))
    for path, result in checked.items():
        name = _relative(path, report.root)
        _record(report, "eval_in_train", name, judge_overlap(path, overlaps[path]))
        _record(report, "eval_pick", name, judge_pick(path, result.form, result.hashes, source, source_prints))


def _record(report: VerifyReport, check: str, key: str | None, judged: tuple[dict, list[str], str]) -> None:
    figures, problems, line = judged
    if key is None:
        report.checks[check] = figures
    else:
        report.checks.setdefault(check, {})[key] = figures
    report.problems += problems
    report.check_lines.append(line)


def _relative(path: Path, root: Path) -> str:
    return Path(os.path.relpath(path, root)).as_posix()


def _is_manifest(path: Path) -> bool:
    """Whether `path` is a manifest `data verify` wrote (before bert.ownership recorded it)."""
    try:
        return load_manifest(path.parent) is not None
    except ShardError:
        return False


@dataclass(frozen=True)
class _FileCheck:
    """One shard's check, with its manifest entry."""

    root: Path
    vocab: Vocab
    limits: Limits
    kinds: np.ndarray  # bert.prep.vocab_fit.piece_kinds of the vocabulary

    def __call__(self, path: Path, report: Advance) -> ShardCheck:
        result = verify_shard(path, self.vocab, self.limits, self.kinds)
        size, stats = path.stat().st_size, result.stats
        result.entry = ManifestEntry(_relative(path, self.root), size, sha256_of(path), stats.samples, result.form,
                                     stats.max_id, stats.max_length, stats.max_predictions)
        result.digest = content_digest(result.hashes)
        report(size)
        return result


def _sets_line(report: VerifyReport) -> tuple[str, Stats]:
    """The summary's first line, and the statistics it counts: training sets that hold the same samples in
    another form (train/ and train_varlen/ of `data mlperf`) are counted once."""
    distinct: list[tuple[str, TrainingSet]] = []
    for name, counted in sorted(report.sets.items()):
        if not any(counted.same_samples_as(other) for _, other in distinct):
            distinct.append((name, counted))
    stats = Stats()
    for _, counted in distinct:
        stats.add(counted.stats)
    shards = sum(counted.shards for _, counted in distinct)
    line = f"{report.root}: {shards} training shard(s), {stats.samples:,} samples"
    if len(report.sets) == 1:
        return f"{line} ({', '.join(sorted(next(iter(report.sets.values())).forms))})", stats
    if len(distinct) == 1:
        return f"{line}, in each of {len(report.sets)} sets: {', '.join(sorted(report.sets))}", stats
    return f"{line} in {len(distinct)} sets: " + "; ".join(
        f"{name} {counted.shards} shard(s), {counted.stats.samples:,} samples" for name, counted in distinct), stats


def summary_lines(report: VerifyReport, bins: int = 8) -> list[str]:
    """The human summary: samples, length histogram, masking rate, next-sentence balance."""
    first, st = _sets_line(report)
    lines = [first]
    evals = [e.path for e in report.entries if e.samples is not None and e.role == "eval"]
    if evals:
        lines.append(f"eval: {report.eval_stats.samples:,} samples ({', '.join(evals)}), not counted above")
    if st.samples == 0:
        return lines
    longest = report.limits.max_seq_length or len(st.length_counts) - 1
    edges = np.unique(np.linspace(0, longest, bins + 1).round().astype(int))
    cumulative = np.concatenate([[0], np.cumsum(st.length_counts)])
    lines.append("sequence length:")
    for lo, hi in zip(edges[:-1], edges[1:]):
        count = int(cumulative[min(hi + 1, len(cumulative) - 1)] - cumulative[min(lo + 1, len(cumulative) - 1)])
        share = count / st.samples
        lines.append(f"  {lo + 1:>5}-{hi:<5} {count:>12,} {share:7.1%} {'#' * round(share * 40)}")
    lines.append(f"masked: {st.masked / max(st.candidates, 1):.2%} of the non-special tokens "
                 f"({st.masked / st.samples:.1f} per sample)")
    lines.append(f"next sentence: {st.random_next / st.samples:.1%} random, "
                 f"{1 - st.random_next / st.samples:.1%} actual")
    return lines
