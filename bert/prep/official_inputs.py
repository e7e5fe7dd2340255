"""The official MLPerf BERT inputs: find them in a download folder and check them against the md5 list.

The MLCommons download holds `results4/part-00000-of-00500` ... `part-00499-of-00500` and `results4/eval.txt`
(one sentence per line, a blank line between documents), `bert_reference_results_text_md5.txt` (one line per
file with its name and md5, in either order, separated by whitespace, tabs or `|`) and `vocab.txt`. Every
file the md5 list names must be present and match before anything is prepared from it; a mismatch names the
file. Hashing 13 GB takes minutes, so a verified file's size, modification time and md5 are remembered in a
small cache and not hashed again while they are unchanged.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from bert.ownership import write_text_atomically
from bert.prep.progress import Advance, progress_bar
from bert.prep.worker_pool import run_parallel

MD5_LIST = "bert_reference_results_text_md5.txt"
PART_NAME = re.compile(r"part-\d{5}-of-\d{5}")
_MD5 = re.compile(r"^[0-9a-fA-F]{32}$")


class InputError(ValueError):
    """An official input that is missing or differs from its md5; the message names the file and the fix."""


@dataclass(frozen=True)
class OfficialInputs:
    parts: list[Path]  # the training text parts, in name order
    eval_text: Path
    vocab: Path
    md5_list: Path


def _first(candidates: list[Path], what: str) -> Path:
    for path in candidates:
        if path.is_file():
            return path
    raise InputError(f"{candidates[0].parent}: no {what} (looked for {', '.join(str(p) for p in candidates)})")


def find_inputs(root: Path) -> OfficialInputs:
    """The official inputs in `root` (the text parts in root/results4, or in root itself)."""
    if not root.is_dir():
        raise InputError(f"{root}: no such folder; give the folder that holds results4/ and {MD5_LIST}")
    texts = root / "results4" if (root / "results4").is_dir() else root
    parts = sorted(p for p in texts.iterdir() if PART_NAME.fullmatch(p.name))
    if not parts:
        raise InputError(f"{texts}: no text parts (part-00000-of-00500 ...)")
    return OfficialInputs(parts, _first([texts / "eval.txt", root / "eval.txt"], "eval text"),
                          _first([root / "vocab.txt", texts / "vocab.txt"], "vocabulary"),
                          _first([root / MD5_LIST, texts / MD5_LIST], "md5 list"))


def read_md5_list(path: Path) -> dict[str, str]:
    """File name -> md5 from the list; raises InputError naming the line that holds no md5."""
    table = {}
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        line = path.read_bytes()[:e.start].count(b"\n") + 1
        raise InputError(f"{path}: line {line}: not UTF-8 (byte 0x{e.object[e.start]:02x}); the md5 list is a text "
                         "file of names and md5s: download it again") from None
    for number, line in enumerate(text.splitlines(), start=1):
        fields = [f for f in re.split(r"[\s|]+", line.strip()) if f]
        if not fields or set(line.strip()) <= set("|-: "):
            continue  # blank lines and the rules of a table
        digests = [f for f in fields if _MD5.match(f)]
        names = [f for f in fields if not _MD5.match(f) and not f.isdigit() and not f.startswith("*")]
        names += [f[1:] for f in fields if f.startswith("*")]  # md5sum's binary-mode marker
        if len(digests) != 1 or len(names) != 1:
            if number == 1 and not digests:
                continue  # a table header
            raise InputError(f"{path}: line {number}: expected a file name and an md5, got {line.strip()!r}")
        table[Path(names[0]).name] = digests[0].lower()
    if not table:
        raise InputError(f"{path}: lists no files")
    return table


def md5_of(path: Path, report: Advance | None = None) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            digest.update(block)
            if report is not None:
                report(len(block))
    return digest.hexdigest()


def verify_inputs(inputs: OfficialInputs, cache: Path, workers: int = 1, show_progress: bool = True) -> int:
    """Checks every part and the eval text against the md5 list (files not listed are refused, so that a
    dataset is never made from unlisted text); returns the number of files hashed now. Raises InputError
    naming the first file that differs."""
    table = read_md5_list(inputs.md5_list)
    files = [*inputs.parts, inputs.eval_text]
    unlisted = [f for f in files if f.name not in table]
    if unlisted:
        raise InputError(f"{unlisted[0]}: not in {inputs.md5_list}; the official inputs are the files it lists")
    missing = sorted(set(table) - {f.name for f in files} - {inputs.vocab.name})
    if missing:
        raise InputError(f"{inputs.parts[0].parent / missing[0]}: listed in {inputs.md5_list} but missing; "
                         "download it again")
    known = json.loads(cache.read_text()) if cache.is_file() else {}
    stale = [f for f in files if known.get(str(f.resolve())) != _stamp(f, table[f.name])]
    with progress_bar("md5", sum(f.stat().st_size for f in stale), "bytes", show_progress and bool(stale)) as advance:
        digests = run_parallel(md5_of, stale, workers, advance)
    for path, digest in zip(stale, digests):
        if digest != table[path.name]:
            raise InputError(f"{path}: md5 {digest}, the list says {table[path.name]}; the file is damaged or not "
                             "the official one: download it again")
        known[str(path.resolve())] = _stamp(path, digest)
    cache.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(cache, json.dumps(known, indent=1) + "\n")
    return len(stale)


def _stamp(path: Path, digest: str) -> list:
    stat = path.stat()
    return [stat.st_size, stat.st_mtime_ns, digest]
