"""Which code a run ran: a digest of the trainer's source (every .py file of the bert package) and the commit of
the checkout it ran from.

Each run logs both (bert.mllog.RunLog.code_version); `mlperf-bert package` and `check` compare the digest with
the bert package that a submission holds, so that a package whose code is not what ran is refused. The digest is
of content, not of a commit: a run of uncommitted changes matches a package made after they are committed.
"""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "bert"
CHECKOUT = Path(__file__).resolve().parent.parent  # the folder that holds the bert package


@dataclass(frozen=True)
class CodeVersion:
    digest: str  # source_digest of the bert package
    commit: str | None  # the checkout's HEAD; None outside a git checkout


def is_source(name: str) -> bool:
    """Whether a path relative to the checkout (with '/') is part of the digest: a .py file of the bert package."""
    return name.startswith(f"{PACKAGE}/") and name.endswith(".py")


def source_digest(files: Iterable[tuple[str, bytes]]) -> str:
    """sha256 of the source files among (path relative to the checkout, content) pairs, in path order."""
    digest = hashlib.sha256()
    for name, data in sorted((name, data) for name, data in files if is_source(name)):
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def checkout_files(root: Path = CHECKOUT) -> list[tuple[str, bytes]]:
    """The source files of the bert package under `root`, as they are on disk."""
    return [(p.relative_to(root).as_posix(), p.read_bytes()) for p in (root / PACKAGE).rglob("*.py") if p.is_file()]


def tar_files(tar: tarfile.TarFile) -> list[tuple[str, bytes]]:
    """The regular files of a tar archive (`git archive` of a checkout), as (path, content)."""
    files = []
    for member in tar.getmembers():
        if member.isfile() and is_source(member.name):
            files.append((member.name, tar.extractfile(member).read()))
    return files


def _git(root: Path, *args: str) -> subprocess.CompletedProcess | None:
    try:
        proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc if proc.returncode == 0 else None


def head_commit(root: Path = CHECKOUT) -> str | None:
    proc = _git(root, "rev-parse", "HEAD")
    return proc.stdout.decode().strip() if proc is not None else None


def running_code(root: Path = CHECKOUT) -> CodeVersion:
    """The code of the checkout as it is now (what a run started now runs)."""
    return CodeVersion(source_digest(checkout_files(root)), head_commit(root))


def committed_code(root: Path = CHECKOUT) -> CodeVersion | None:
    """The code of the checkout's HEAD commit (what `git archive HEAD` holds); None outside a git checkout."""
    archive = _git(root, "archive", "--format=tar", "HEAD", "--", PACKAGE)
    if archive is None:
        return None
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        return CodeVersion(source_digest(tar_files(tar)), head_commit(root))
