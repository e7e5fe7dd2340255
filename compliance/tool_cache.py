"""What the official tools said of a system, kept so that `check` then `score` (then `report`, `review`) on the same
submission runs each tool once.

The tools are deterministic: the same files, ruleset, tools and Python give the same verdicts and output. So an
entry is keyed by all of them: the SHA-256 of every file of the staged package of one system (names and bytes,
compliance.staging), the ruleset, the mlperf-logging version with the size and time of each of its files, the
Python version and the source of compliance/tool_runner.py. Any change to any of them is another key; an entry is
never updated in place, only completed (the package checker's part first, the summarizer's when a `score` asks).

Entries live in `$MLPERF_BERT_CACHE` (default `~/.cache/mlperf-bert/official-tools`), a folder only this user
writes (made 0700); each is written to a temporary name and renamed, and one that cannot be read as an entry is
ignored (the tools run again). `MLPERF_BERT_CACHE=off` keeps nothing. Entries unused for 30 days are removed when
a new one is written.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import time
from importlib.metadata import files, version
from pathlib import Path

from bert.ownership import write_text_atomically

ENV = "MLPERF_BERT_CACHE"
KEEP_SECONDS = 30 * 24 * 3600


def cache_folder() -> Path | None:
    """Where entries live; None when the cache is off."""
    given = os.environ.get(ENV)
    if given == "off":
        return None
    return Path(given) if given else Path.home() / ".cache" / "mlperf-bert" / "official-tools"


@functools.cache
def _tools_identity() -> str:
    """The tools that run: mlperf-logging (version, and each installed file's size and time), Python, the runner."""
    parts = [f"mlperf-logging {version('mlperf-logging')}", platform.python_version()]
    for entry in sorted(files("mlperf-logging") or [], key=str):
        path = Path(entry.locate())
        if path.suffix in (".py", ".yaml", ".json") and path.is_file():
            info = path.stat()
            parts.append(f"{entry} {info.st_size} {info.st_mtime_ns}")
    parts.append(hashlib.sha256(Path(__file__).with_name("tool_runner.py").read_bytes()).hexdigest())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def key(package: Path, ruleset: str) -> str:
    """The key of the staged package of one system (every file under `package`, by path relative to its parent,
    so that the ORG folder's name counts too)."""
    digest = hashlib.sha256(f"{_tools_identity()}\n{ruleset}\n".encode())
    for path in sorted(p for p in package.rglob("*") if p.is_file()):
        name = path.relative_to(package.parent).as_posix()
        digest.update(f"{name}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode())
    return digest.hexdigest()


def load(entry_key: str) -> dict:
    """The entry under `entry_key` ({} when there is none or it cannot be read)."""
    folder = cache_folder()
    if folder is None:
        return {}
    path = folder / f"{entry_key}.json"
    try:
        entry = json.loads(path.read_text())
        os.utime(path)  # used: kept another 30 days
    except (OSError, ValueError):
        return {}
    return entry if isinstance(entry, dict) else {}


def store(entry_key: str, entry: dict) -> None:
    """Writes the entry (a cache that cannot be written is no error: the tools run again next time)."""
    folder = cache_folder()
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_text_atomically(folder / f"{entry_key}.json", json.dumps(entry))
        _forget_unused(folder)
    except OSError:
        pass


def _forget_unused(folder: Path) -> None:
    oldest = time.time() - KEEP_SECONDS
    for path in folder.glob("*.json"):
        try:
            if path.stat().st_mtime < oldest:
                path.unlink()
        except OSError:
            pass
