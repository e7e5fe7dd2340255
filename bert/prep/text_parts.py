"""Text parts in the reference layout: one sentence per line, a blank line between documents.

Parts are read as a stream of sentences, line by line, with the checks a user needs before hours of work
go into a bad corpus: every line must be UTF-8, a part must hold text and at least one document break.
Errors name the file and the line.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path


class TextError(ValueError):
    """A text part that cannot be used; the message names the file, the line and the fix."""


def expand_inputs(paths: list[str | os.PathLike], suffixes: tuple[str, ...] = ()) -> list[Path]:
    """Files named directly, plus the files inside named folders (sorted, hidden files skipped; with
    `suffixes`, only files ending in one of them)."""
    found: list[Path] = []
    for given in map(Path, paths):
        if given.is_dir():
            inside = sorted(p for p in given.iterdir() if p.is_file() and not p.name.startswith(".")
                            and (not suffixes or p.name.endswith(suffixes)))
            if not inside:
                wanted = f" ending in {' or '.join(suffixes)}" if suffixes else ""
                raise TextError(f"{given}: folder holds no files{wanted}")
            found.extend(inside)
        elif given.is_file():
            found.append(given)
        else:
            raise TextError(f"{given}: no such file or folder")
    duplicates = {p for p in found if found.count(p) > 1}
    if duplicates:
        raise TextError(f"{sorted(duplicates)[0]}: given more than once")
    return found


def read_lines(path: Path, on_bytes: Callable[[int], None] | None = None) -> Iterator[tuple[int, str]]:
    """(line number, stripped line) for every line of a UTF-8 file; `on_bytes` hears how much was read."""
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            if on_bytes is not None:
                on_bytes(len(raw))
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise TextError(f"{path}: line {number}: not UTF-8 (byte 0x{raw[e.start]:02x} at column "
                                f"{e.start + 1}); convert the file to UTF-8") from None
            yield number, line.strip()


def read_documents(path: Path, on_bytes: Callable[[int], None] | None = None) -> Iterator[list[str]]:
    """The documents of one part, each a list of sentences. Raises TextError (after the documents read so
    far) for an empty part or a part with a single document: random next sentences need other documents."""
    sentences: list[str] = []
    documents, last_line = 0, 0
    for number, line in read_lines(path, on_bytes):
        last_line = number
        if line:
            sentences.append(line)
        elif sentences:
            documents += 1
            yield sentences
            sentences = []
    if sentences:
        documents += 1
        yield sentences
    if documents == 0:
        raise TextError(f"{path}: line {max(last_line, 1)}: empty part (no sentences); remove it or fill it")
    if documents == 1:
        raise TextError(f"{path}: line {last_line}: one document only (no blank line between documents) in "
                        f"{last_line} lines; the layout is one sentence per line and a blank line after each "
                        "document")
