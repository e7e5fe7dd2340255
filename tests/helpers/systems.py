"""Descriptors the tests break on purpose: unchecked JSON, written as it is (every valid variant is made
with Descriptor.variant or Descriptor.cpu_variant)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from bert.descriptor_files import resolved_descriptor, with_run_values
from tests.helpers.repo import REPO


def unchecked_descriptor(run: Mapping[str, object] | None = None) -> dict:
    """The JSON of systems/cpu_micro.json with run fields set by dotted path (`optimizer.beta_1`) and nothing
    checked: the input of the tests of what the loader refuses, to break further by hand and write with
    write_unchecked. Every valid variant is made with Descriptor.variant (and Descriptor.write)."""
    data, _ = resolved_descriptor(REPO / "systems" / "cpu_micro.json")
    return with_run_values(data, run or {})


def write_unchecked(folder: Path, name: str, data: dict) -> Path:
    """`data` as folder/<name>.json, as it is (Descriptor.write refuses what does not load)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps(data, indent=2))
    return path
