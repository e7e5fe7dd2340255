"""Replacing an output folder in one step, so that a reader never sees a half-written one."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

from compliance.errors import InputError


def _sibling(target: Path, tag: str) -> Path:
    return target.parent / f".{target.name}.{tag}-{uuid.uuid4().hex[:8]}"


def staging_folder(target: Path) -> Path:
    """A new empty folder beside `target` to build into (same file system, so the final rename is atomic)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = _sibling(target, "partial")
    staging.mkdir()
    return staging


def replace_folder(built: Path, target: Path) -> None:
    """Moves `built` to `target`; an existing `target` is moved aside first, put back if the move fails, and
    deleted only once `built` is in place."""
    if not target.exists():
        built.rename(target)
        return
    aside = _sibling(target, "old")
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
    `build` returns; on any failure (or interruption) the staging folder is removed and `target`, if it
    existed, is left as it was. A target that is no folder is refused first (refuse_unreplaceable)."""
    refuse_unreplaceable(target)
    staging = staging_folder(target)
    try:
        build(staging)
        replace_folder(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
