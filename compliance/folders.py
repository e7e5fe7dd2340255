"""Replacing an output folder in one step, so that a reader never sees a half-written one."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable
from pathlib import Path


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


def build_in_place(target: Path, build: Callable[[Path], None]) -> None:
    """Runs `build(folder)` on a staging folder beside `target` and moves the result to `target` only when
    `build` returns; on any failure (or interruption) the staging folder is removed and `target`, if it
    existed, is left as it was."""
    staging = staging_folder(target)
    try:
        build(staging)
        replace_folder(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
