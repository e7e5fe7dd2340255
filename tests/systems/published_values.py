"""The record of every value the published descriptors (systems/*.json) resolve to: fixtures/published_values.json,
written by this module and held by tests/systems/test_descriptors.py.

Each descriptor's values are its resolved run block and system description, field by field (dotted paths; the
search space and the model overrides stay whole, maps of their own; the notes are left out). A change to a
published descriptor, to a base, or to a field's default shows as a change of the record: make it, then

    python -m tests.systems.published_values --write

rewrites the record from the descriptors, and `git diff` shows every value that moved, in every descriptor that
inherits it. Without --write it prints what would change.
"""

from __future__ import annotations

import dataclasses
import json
import sys

from bert.system import Descriptor, load_descriptor
from tests.helpers.repo import REPO

RECORD = REPO / "tests" / "systems" / "fixtures" / "published_values.json"
WHOLE = ("run.search", "run.model_overrides")  # maps of their own, recorded whole


def published_names() -> list[str]:
    """The published descriptors: every file of the repository's systems/."""
    return sorted(path.stem for path in (REPO / "systems").glob("*.json"))


def _flat(data: dict, prefix: str = "") -> dict:
    """Dotted field paths to values; the WHOLE maps stay whole."""
    values = {}
    for key, value in data.items():
        if isinstance(value, dict) and value and f"{prefix}{key}" not in WHOLE:
            values.update(_flat(value, f"{prefix}{key}."))
        else:
            values[f"{prefix}{key}"] = value
    return values


def resolved_values(system: Descriptor) -> dict:
    """Every value `system` stands for, by dotted path, as JSON holds it."""
    run = json.loads(json.dumps(dataclasses.asdict(system.run)))
    run.pop("notes")
    return _flat({"system": system.description, "run": run})


def record_text() -> str:
    """The record as the descriptors make it now."""
    record = {name: resolved_values(load_descriptor(REPO / "systems" / f"{name}.json")) for name in published_names()}
    return json.dumps(record, indent=1, sort_keys=True) + "\n"


def _shown(values: dict, path: str) -> str:
    return json.dumps(values[path]) if path in values else "(absent)"


def changes(recorded: dict, made: dict) -> list[str]:
    """What differs between two records, one line per descriptor and field: "name: path: old -> new"."""
    lines = []
    for name in sorted(recorded.keys() | made.keys()):
        old, new = recorded.get(name, {}), made.get(name, {})
        lines += [f"{name}: {path}: {_shown(old, path)} -> {_shown(new, path)}"
                  for path in sorted(old.keys() | new.keys()) if old.get(path, KeyError) != new.get(path, KeyError)]
    return lines


def main(argv: list[str]) -> int:
    made = record_text()
    if argv == ["--write"]:
        RECORD.write_text(made)
        print(f"wrote {RECORD.relative_to(REPO)} ({len(json.loads(made))} descriptors)")
    elif not argv:
        differ = changes(json.loads(RECORD.read_text()), json.loads(made))
        print("\n".join(differ) if differ else f"{RECORD.relative_to(REPO)} is what the descriptors make")
    else:
        print("usage: python -m tests.systems.published_values [--write]", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
