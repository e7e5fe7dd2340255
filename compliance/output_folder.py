"""Replacing an output folder in one step, so that a reader never sees a half-written one.

The folder is built beside its target under a hidden name that says whose it is (`.ORG.partial-<host>-<pid>-<tag>`)
and moved into place whole. SIGTERM, like Ctrl-C, ends a build through its cleanup (the staging folder is removed;
it stayed, and `score` of the output then found two submissions and `check` of the staging folder alone passed
it), and the swap itself is never cut in two. What a killed build (SIGKILL, a lost node) left is removed by the
next build of the same target on the same host, once its process is gone; a previous tree moved aside is put
back.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import uuid
from collections.abc import Callable
from pathlib import Path

from bert.interrupts import signals_deferred, signals_interrupt
from bert.ownership import process_gone
from compliance.errors import InputError

_PARTIAL, _OLD = "partial", "old"


def _sibling(target: Path, tag: str) -> Path:
    return target.parent / f".{target.name}.{tag}-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _abandoned(target: Path) -> list[tuple[str, Path]]:
    """The (kind, folder) siblings of `target` that a build on this host whose process is gone left behind (one of
    another host's may be at work: a shared file system)."""
    pattern = re.compile(rf"\.{re.escape(target.name)}\.({_PARTIAL}|{_OLD})-{re.escape(socket.gethostname())}-(\d+)"
                         r"-[0-9a-f]{8}")
    found = []
    for sibling in sorted(target.parent.iterdir()) if target.parent.is_dir() else []:
        match = pattern.fullmatch(sibling.name)
        if match and sibling.is_dir() and not sibling.is_symlink() and process_gone(int(match[2])):
            found.append((match[1], sibling))
    return found


def _recover(target: Path) -> None:
    """Removes what killed builds of `target` left; a previous tree one moved aside comes back when `target` is
    missing (the build was killed between the two renames of replace_folder)."""
    for kind, folder in _abandoned(target):
        if kind == _OLD and not os.path.lexists(target):
            folder.rename(target)
        else:
            shutil.rmtree(folder, ignore_errors=True)


def staging_folder(target: Path) -> Path:
    """A new empty folder beside `target` to build into (same file system, so the final rename is atomic)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = _sibling(target, _PARTIAL)
    staging.mkdir()
    return staging


def replace_folder(built: Path, target: Path) -> None:
    """Moves `built` to `target`; an existing `target` is moved aside first, put back if the move fails, and
    deleted only once `built` is in place."""
    if not target.exists():
        built.rename(target)
        return
    aside = _sibling(target, _OLD)
    target.rename(aside)
    try:
        built.rename(target)
    except BaseException:
        aside.rename(target)
        raise
    shutil.rmtree(aside)


def refuse_unreplaceable(target: Path) -> None:
    """InputError, before anything is written, for a `target` that is no folder: a symbolic link (moved aside, the
    link would be replaced while what it points to stayed, and its removal would fail after the change) or a
    file."""
    if target.is_symlink():
        raise InputError(f"{target}: is a symbolic link (to {os.readlink(target)}), not a folder; nothing was "
                         "written: remove the link, or choose another output folder")
    if target.exists() and not target.is_dir():
        raise InputError(f"{target}: is a file, not a folder; nothing was written: move it away, or choose another "
                         "output folder")


def build_in_place(target: Path, build: Callable[[Path], None]) -> None:
    """Runs `build(folder)` on a staging folder beside `target` and moves the result to `target` only when
    `build` returns; on any failure or interruption (Ctrl-C, SIGTERM: KeyboardInterrupt) the staging folder is
    removed and `target`, if it existed, is left as it was. A target that is no folder is refused first
    (refuse_unreplaceable)."""
    refuse_unreplaceable(target)
    _recover(target)
    staging = staging_folder(target)
    try:
        with signals_interrupt():
            build(staging)
            with signals_deferred():
                replace_folder(staging, target)
    finally:
        with signals_deferred():
            shutil.rmtree(staging, ignore_errors=True)
