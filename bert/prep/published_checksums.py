"""The checksums the MLCommons reference publishes for the files of a closed MLPerf BERT submission, read from
verbatim copies of its own files (bert/prep/published/, whose SOURCE.json names the repository, the commit and
each file's path and git blob hash): nothing here is retyped.

dataset.md (retired_benchmarks/bert/ of mlcommons/training) tabulates, with sizes and md5s, the provided files
(vocab.txt, bert_config.json, the TF1 and TF2 phase-1 checkpoint `model.ckpt-28252`, the Wikipedia dump) and the
text the cleanup scripts make (eval.txt, eval.md5, and of the 500 training parts the first and last three; the
others are published only as `...`). cleanup_scripts/eval.md5 holds the md5 of each of the 10,000 eval articles,
as seperate_test_set.py hashed them: md5(article.rstrip()), the articles of eval.txt being separated by a blank
line.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

FOLDER = Path(__file__).resolve().parent / "published"
_ROW = re.compile(r"^\|\s*([^|]+?)\s*\|\s*([\d,]+)\s*\|\s*([0-9a-f]{32})\s*\|\s*$")
_VARIANT = re.compile(r"^(.*?)\s*\((tf1|tf2)\)$")
_MD5 = re.compile(r"^[0-9a-f]{32}$")


@dataclass(frozen=True)
class PublishedFile:
    name: str  # the file's name: vocab.txt, model.ckpt-28252.index, part-00000-of-00500, ...
    variant: str | None  # "tf1" or "tf2" for the checkpoint's files
    size: int  # bytes
    md5: str
    section: str  # the heading of dataset.md's table that lists it


@functools.lru_cache(maxsize=1)
def source() -> dict:
    """SOURCE.json: the repository, the commit and the path of each vendored file."""
    return json.loads((FOLDER / "SOURCE.json").read_text())


def source_text(name: str = "dataset.md") -> str:
    """Where the vendored file `name` comes from, in words."""
    origin = source()
    repository = origin["repository"].removeprefix("https://github.com/")
    return f"{repository} {origin['files'][name]['path']} at {origin['commit'][:12]}"


def parse_tables(text: str) -> list[PublishedFile]:
    """Every `| file | size | md5 |` row of dataset.md's tables, with the heading above its table."""
    files, section = [], ""
    for line in text.splitlines():
        if line.startswith("#"):
            section = line.lstrip("#").strip().rstrip(":")
            continue
        match = _ROW.match(line.strip())
        if match is None:
            continue
        name, size, md5 = match.groups()
        variant = _VARIANT.match(name)
        name, kind = (variant.group(1), variant.group(2)) if variant else (name, None)
        files.append(PublishedFile(name, kind, int(size.replace(",", "")), md5, section))
    return files


@functools.lru_cache(maxsize=1)
def published_files() -> tuple[PublishedFile, ...]:
    return tuple(parse_tables((FOLDER / "dataset.md").read_text(encoding="utf-8")))


def published(name: str, variant: str | None = None) -> PublishedFile | None:
    """The published entry of the file `name` (of the checkpoint `variant`), or None when none is published."""
    return next((f for f in published_files() if f.name == name and f.variant == variant), None)


def text_files() -> dict[str, PublishedFile]:
    """The cleanup scripts' output that dataset.md publishes (eval.txt, eval.md5 and six of the 500 parts)."""
    return {f.name: f for f in published_files() if f.section.startswith("Files in <bert>/results")}


def checkpoint_files(variant: str) -> dict[str, PublishedFile]:
    """The files of the phase-1 checkpoint `variant` ("tf1" or "tf2"), by name."""
    return {f.name: f for f in published_files() if f.variant == variant}


@functools.lru_cache(maxsize=1)
def eval_article_md5s() -> tuple[str, ...]:
    """eval.md5: the md5 of each eval article, in eval.txt's order."""
    lines = (FOLDER / "eval.md5").read_text(encoding="ascii").split()
    bad = [line for line in lines if not _MD5.match(line)]
    if bad:
        raise ValueError(f"{FOLDER / 'eval.md5'}: {bad[0]!r} is no md5; the vendored file is damaged: copy it again "
                         f"from {source_text('eval.md5')}")
    return tuple(lines)
