"""Whether a download, a prepared dataset or a checkpoint is the official MLPerf one: every checksum that the
reference publishes for it matches (bert.prep.published_checksums), and which file differs otherwise.

A download's md5 list (bert_reference_results_text_md5.txt) proves only that its files are the ones it lists; a
made-up download comes with a list of its own. So `judge_download` compares what the reference itself
publishes: 500 parts named as the reference's, the sizes and md5s of eval.txt and of the parts dataset.md lists,
and of vocab.txt (for an eval.txt that differs, the first article that differs from eval.md5's). `data mlperf`
records the verdict beside the tree it makes (official.json, with the SHA-256 of every file it verified), and
`dataset_verdict` holds a tree to it: official only while its files are still those. `judge_tf_checkpoint` does
the same for the TF1 or TF2 phase-1 checkpoint, `checkpoint convert` stores the verdict in the file it writes,
and `checkpoint_verdict` reads it back.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import asdict, dataclass
from pathlib import Path

from bert.prep.official_inputs import md5_of
from bert.prep.published_checksums import checkpoint_files, eval_article_md5s, published, source_text, text_files

OFFICIAL_RECORD = "official.json"  # beside a tree `data mlperf` made: its verdict and the files it covers
PARTS = 500  # the official training text: part-00000-of-00500 ... part-00499-of-00500
_MAX_RECORD_BYTES = 4 << 20  # an official.json of 8,642 files is about 1 MB
_MAX_EVAL_TEXT = 4  # read an eval.txt for its articles only up to this many times the published one's size
TF_DATA = "model.ckpt-28252.data-00000-of-00001"


@dataclass(frozen=True)
class Verdict:
    official: bool
    reason: str  # official: what matched and where the checksums come from; else the first thing that differs

    def line(self, what: str) -> str:
        """One line: "official MLPerf <what>: ..." or "not the official MLPerf <what>: ..."."""
        return f"{'' if self.official else 'not the '}official MLPerf {what}: {self.reason}"


def _differs(path: Path, name: str, size: int, md5: str | None, variant: str | None = None) -> str | None:
    """What differs between `path` (of `size` bytes and `md5`, when known) and the published file `name`."""
    entry = published(name, variant)
    what = f"{name} ({variant.upper()})" if variant else name
    if size != entry.size:
        return f"{path} is {size:,} bytes, the published {what} {entry.size:,} ({source_text()})"
    md5 = md5 if md5 is not None else md5_of(path)
    if md5 != entry.md5:
        return f"{path} has md5 {md5}, the published {what} {entry.md5} ({source_text()})"
    return None


def eval_article_difference(path: Path) -> str | None:
    """Where eval.txt at `path` first differs from the reference's eval articles (eval.md5: md5(article.rstrip()),
    articles separated by a blank line), or None when every article matches."""
    expected = eval_article_md5s()
    if path.stat().st_size > _MAX_EVAL_TEXT * published("eval.txt").size:
        return None  # far from the official one: its size says enough
    articles = [a for a in path.read_text(encoding="utf-8", errors="replace").split("\n\n") if a.strip()]
    for index, (article, md5) in enumerate(zip(articles, expected)):
        if hashlib.md5(article.rstrip().encode("utf-8")).hexdigest() != md5:
            return f"its article {index + 1} of {len(expected):,} differs from the reference's (eval.md5)"
    if len(articles) != len(expected):
        return f"it holds {len(articles):,} articles, the reference's {len(expected):,} (eval.md5)"
    return None


def judge_download(parts: list[Path], eval_text: Path, vocab: Path, listed: dict[str, str]) -> Verdict:
    """The official download's verdict on a download whose `parts` and `eval_text` match its md5 list `listed`
    (name -> md5; official_inputs.verify_inputs has checked them): its parts are the reference's 500, and every
    file whose checksum the reference publishes matches it."""
    names = [p.name for p in parts]
    official_names = [f"part-{i:05d}-of-{PARTS:05d}" for i in range(PARTS)]
    if names != official_names:
        return Verdict(False, f"{len(parts)} text part(s) ({names[0]} ...), the official download has {PARTS} "
                       f"({official_names[0]} ... {official_names[-1]})")
    published_text = text_files()
    for path in [*parts, eval_text]:
        if path.name in published_text:
            problem = _differs(path, path.name, path.stat().st_size, listed[path.name])
            if problem:
                where = eval_article_difference(path) if path.name == "eval.txt" else None
                return Verdict(False, problem + (f"; {where}" if where else ""))
    problem = _differs(vocab, "vocab.txt", vocab.stat().st_size, None)
    if problem:
        return Verdict(False, problem)
    return Verdict(True, f"{PARTS} parts, eval.txt and vocab.txt match every checksum the reference publishes "
                   f"({source_text()}), the other parts the download's md5 list")


def record_tree(out: Path, verdict: Verdict, files: dict[str, str]) -> Path:
    """Writes out/official.json: `verdict` on the download a tree was made from, and `files` (path relative to
    `out` -> SHA-256) that it covers."""
    from bert.ownership import write_text_atomically

    path = out / OFFICIAL_RECORD
    write_text_atomically(path, json.dumps({**asdict(verdict), "checksums": source_text(), "files": files},
                                           indent=1) + "\n")
    return path


def _read_record(path: Path) -> dict | None:
    """The small JSON file at `path`, or None when it is none (missing, not a regular file, too large, not JSON)."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_RECORD_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def dataset_verdict(root: Path, hashes: dict[str, str] | None = None) -> Verdict:
    """Whether the tree at `root` is the official MLPerf dataset: `data mlperf` made it from an official download
    (official.json) and its files are still those (the manifest's, or the SHA-256 `hashes` a verification just
    computed, path -> sha256, against the record; without `hashes` the manifest, checked as training checks it)."""
    record = _read_record(root / OFFICIAL_RECORD)
    if record is None or not isinstance(record.get("files"), dict) or not isinstance(record.get("official"), bool):
        return Verdict(False, f"{root} was not made by `mlperf-bert data mlperf` from the official download (no "
                       f"{OFFICIAL_RECORD} of its; `data prepare`, `data import` and synthetic data make no official "
                       "dataset)")
    if not record["official"]:
        return Verdict(False, f"{root} was made from a download that is not the official one: {record.get('reason')}")
    if hashes is None:
        from bert.data.manifest import check_manifest
        from bert.data.shards import ShardError

        try:
            hashes = {entry.path: entry.sha256 for entry in check_manifest(root)}
        except ShardError as e:
            return Verdict(False, f"{e}")
    made = record["files"]
    for relative in sorted(set(made) | set(hashes)):
        if made.get(relative) != hashes.get(relative):
            change = "missing" if relative not in hashes else "added" if relative not in made else "changed"
            return Verdict(False, f"{root / relative}: {change} since `data mlperf` made the tree from the official "
                           "download")
    return Verdict(True, f"{root}: made by `data mlperf` from a download whose every published checksum matches "
                   f"({source_text()}), its {len(made):,} files unchanged since")


def judge_tf_checkpoint(prefix: Path) -> Verdict:
    """Whether the TensorFlow checkpoint at `prefix` is the official phase-1 checkpoint, TF1 or TF2: the published
    size (first: no 4 GB is hashed for a file of another size) and md5 of each of its files."""
    data = Path(f"{prefix}.data-00000-of-00001")
    if prefix.name != "model.ckpt-28252" or not data.is_file():
        return Verdict(False, f"{prefix} is not model.ckpt-28252 in one data file ({TF_DATA}), as the published "
                       f"checkpoint is ({source_text()})")
    size = data.stat().st_size
    variants = [v for v in ("tf1", "tf2") if checkpoint_files(v)[TF_DATA].size == size]
    if not variants:
        sizes = " or ".join(f"{checkpoint_files(v)[TF_DATA].size:,} ({v.upper()})" for v in ("tf1", "tf2"))
        return Verdict(False, f"{data} is {size:,} bytes, the published phase-1 checkpoint's {sizes} "
                       f"({source_text()})")
    (variant,) = variants
    files = checkpoint_files(variant)
    for name in sorted(files, key=lambda n: files[n].size):  # the small files first: a 4 GB hash comes last
        path = prefix.parent / name
        if name.endswith(".meta") and not path.exists():
            continue  # the graph is not needed to read the weights
        problem = _differs(path, name, path.stat().st_size, None, variant) if path.is_file() else \
            f"{path} is missing; the published {variant.upper()} checkpoint has it"
        if problem:
            return Verdict(False, problem)
    return Verdict(True, f"{prefix} ({variant.upper()}) matches the published md5 of each of its files "
                   f"({source_text()})")


def judge_checkpoint_source(path: Path, container: str) -> Verdict:
    """The verdict on a checkpoint that `checkpoint convert` reads (`container` as bert.checkpoint_files names it)."""
    if container != "tensorflow":
        return Verdict(False, f"{path} is a {container} file; the reference publishes the checksums of its "
                       f"TensorFlow checkpoint model.ckpt-28252 ({source_text()}): convert that")
    return judge_tf_checkpoint(path)


def checkpoint_verdict(path: Path) -> Verdict:
    """The verdict `checkpoint convert` stored in the checkpoint at `path` (read without its weights)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return Verdict(False, f"{path} is not a regular file")
        import torch

        saved = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
    except Exception as e:  # torch raises many types for a file that is not a torch archive
        return Verdict(False, f"{path} cannot be read as a checkpoint ({type(e).__name__}); convert the official "
                       "one with `mlperf-bert checkpoint convert model.ckpt-28252 OUT`")
    stored = saved.get("official") if isinstance(saved, dict) else None
    if not isinstance(stored, dict) or not isinstance(stored.get("official"), bool):
        return Verdict(False, f"{path} was not written by `mlperf-bert checkpoint convert` from the published "
                       "checkpoint; convert model.ckpt-28252 with it")
    return Verdict(stored["official"], str(stored.get("reason", "")))


def imported_verdict(vocab: Path | None) -> Verdict:
    """What `data import` can say of the shards it imported: no published checksum covers TFRecord files, so they
    are never the official dataset (the vocabulary given, when it is the published one, is said so)."""
    vocab_said = ""
    if vocab is not None:
        problem = _differs(vocab, "vocab.txt", vocab.stat().st_size, None)
        vocab_said = f" ({vocab} is the published vocab.txt)" if problem is None else f" ({problem})"
    return Verdict(False, f"the reference publishes the checksums of its text, vocabulary and checkpoint, not of "
                   f"TFRecord files{vocab_said}: a closed run trains on the tree `mlperf-bert data mlperf` makes from "
                   "the official download")
