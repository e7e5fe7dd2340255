"""What the data benchmarks share: a measured child process (`mlperf-bert data ...` or a module of theirs) and
real text put in the reference layout (one sentence per line, a blank line between documents).

A child's peak memory and CPU time come from wait4, which reports them for the child and the workers it
reaped; the measuring parent imports neither torch nor the data modules, because a child's peak RSS starts at
its parent's (Linux keeps the high-water mark across fork and exec).
"""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
_BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


@dataclass(frozen=True)
class Child:
    stdout: str
    seconds: float  # wall
    peak_mib: float  # peak RSS of the child and the workers it reaped
    cpu_seconds: float  # user + system, the same


def run_child(args: list[str], what: str) -> Child:
    """Runs `python ARGS` (one torch thread); SystemExit naming `what` and its stderr when it fails."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, *args], stdout=out, stderr=err, text=True,
                                env={**os.environ, "OMP_NUM_THREADS": "1"})
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status):
            raise SystemExit(f"{what} failed:\n{err.read()[-3000:]}")
        return Child(out.read(), seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime)


def run_data_command(args: list[str]) -> tuple[str, float, float]:
    """Runs `mlperf-bert data ARGS --quiet`; returns (stdout, wall seconds, peak RSS in MiB of the command and
    its workers)."""
    child = run_child(["-m", "bert.cli", "data", *args, "--quiet"], f"mlperf-bert data {' '.join(args)}")
    return child.stdout, child.seconds, child.peak_mib


def sentences(paragraph: str) -> list[str]:
    """A paragraph cut into sentences at `. ! ?` before a capital or a digit (the reference used NLTK's punkt)."""
    return [s.strip() for s in SENTENCE_END.split(paragraph) if s.strip()]


def wiki_layout(sources: list[Path], target: Path) -> None:
    """WikiExtractor output -> one sentence per line, a blank line between articles (titles dropped)."""
    lines: list[str] = []
    for source in sources:
        title_next = False
        for raw in source.read_text(encoding="utf-8").splitlines():
            line = raw.strip()
            if line.startswith("<doc"):
                title_next = True
                if lines and lines[-1]:
                    lines.append("")
            elif line and not line.startswith("</doc") and not title_next:
                lines += sentences(line)
            elif line:
                title_next = False
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")


def dictd_documents(database: Path) -> list[list[str]]:
    """The entries of a dictd database (NAME.dict.dz beside NAME.index: FOLDOC, the Jargon File) as documents
    of sentences, each entry once (the index lists an entry under each of its headwords): the headword lines,
    the <category> tags, the {link} braces and the date lines dropped."""
    data = gzip.open(database, "rb").read()
    index = database.with_name(database.name.removesuffix(".dict.dz") + ".index")
    entries = {tuple(map(_base64, line.split("\t")[1:3])) for line in index.read_text(encoding="utf-8").splitlines()
               if not line.startswith("00")}  # 00-database-*: the database's own description
    documents = []
    for start, length in sorted(entries):
        headwords, *paragraphs = _paragraphs(data[start:start + length].decode("utf-8", "replace").splitlines())
        document = []
        for paragraph in paragraphs:
            text = re.sub(r"^<[^>]*>\s*", "", paragraph).replace("{", "").replace("}", "")
            if text and not re.fullmatch(r"\(\d{4}-\d{2}-\d{2}\)", text):
                document += sentences(text)
        if document:
            documents.append(document)
    return documents


def _paragraphs(lines: list[str]) -> list[str]:
    """Lines joined into paragraphs at blank lines (at least one, maybe empty)."""
    paragraphs, current = [], []
    for line in [*lines, ""]:
        if line.strip():
            current.append(line.strip())
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    return paragraphs or [""]


def _base64(digits: str) -> int:
    value = 0
    for c in digits:
        value = value * 64 + _BASE64.index(c)
    return value
