"""Replacing an output folder in one step, so that a reader never sees a half-written one."""

from __future__ import annotations

import shutil
import uuid
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
    """Moves `built` to `target`; an existing `target` is moved aside first and deleted only after."""
    if not target.exists():
        built.rename(target)
        return
    aside = _sibling(target, "old")
    target.rename(aside)
    built.rename(target)
    shutil.rmtree(aside)
