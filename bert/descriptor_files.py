"""Descriptor files: reading one, and resolving the bases it inherits from.

A descriptor may name a base (`"base": "dgxa100_1x8"`, a descriptor in the same folder) and state only what
differs; merged_descriptor is the one rule by which the two combine. bert.system validates the result.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from pathlib import Path

from bert.typed_config import ConfigError

SYSTEM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
SYSTEM_NAME_RULE = "letters, digits, '.', '_' and '-', starting with a letter or a digit"
BASE_KEY = "base"  # a descriptor's optional top-level field naming the descriptor it inherits from


def _read_descriptor_json(path: Path) -> object:
    where = str(path)
    if path.is_dir():
        raise ConfigError(where, "", "is a folder, not a descriptor; give a descriptor file (e.g. "
                          "systems/cpu_tiny.json) or the name of one in systems/")
    if path.exists() and not path.is_file():
        raise ConfigError(where, "", "is not a regular file (a pipe, a device or a socket); give a descriptor file "
                          "(e.g. systems/cpu_tiny.json) or the name of one in systems/")
    if not path.is_file():
        available = sorted(p.stem for p in path.parent.glob("*.json")) if path.parent.is_dir() else []
        raise ConfigError(where, "", "no such descriptor" + (f"; available: {', '.join(available)}"
                                                            if available else ""))
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(where, "", "not a text file (not UTF-8); a descriptor is a JSON file like "
                          "systems/cpu_tiny.json") from None
    except json.JSONDecodeError as e:
        raise ConfigError(where, "", f"not valid JSON: {e}") from None
    except OSError as e:
        raise ConfigError(where, "", f"cannot be read ({e.strerror or e})") from None


def merged_descriptor(base: dict, own: Mapping) -> dict:
    """`own` laid over `base`: an object merges key by key, any other value (a list, a number, null) replaces
    the base's. The one rule by which a descriptor inherits from its base."""
    merged = copy.deepcopy(base)
    for key, value in own.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merged_descriptor(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _inheritance_chain(path: Path) -> list[tuple[Path, object]]:
    """The descriptor at `path` and the bases it names (`"base": "<name>"`, a descriptor in the same folder),
    most basic first, each with its own JSON (without the base key)."""
    chain: list[tuple[Path, object]] = []
    while True:
        data = _read_descriptor_json(path)
        if any(path.resolve() == seen.resolve() for seen, _ in chain):
            names = " -> ".join(p.stem for p in [*(p for p, _ in chain), path])
            raise ConfigError(str(chain[0][0]), BASE_KEY, f"the bases form a cycle ({names}); one of them must "
                              "state its values instead of naming a base")
        if not isinstance(data, dict) or BASE_KEY not in data:
            chain.append((path, data))
            return list(reversed(chain))
        base = data[BASE_KEY]
        if not isinstance(base, str) or not SYSTEM_NAME.fullmatch(base):
            raise ConfigError(str(path), BASE_KEY, f"{base!r} must name a descriptor in the same folder by its "
                              "file stem, e.g. \"dgxa100_1x8\"")
        chain.append((path, {k: v for k, v in data.items() if k != BASE_KEY}))
        if not (path.parent / f"{base}.json").is_file():
            raise ConfigError(str(path), BASE_KEY, f"no descriptor {base}.json beside this one to inherit from")
        path = path.parent / f"{base}.json"


def _set_in(data: object, field_path: str) -> bool:
    """Whether descriptor JSON `data` states the field at the dotted path (list indices ignored)."""
    for part in re.sub(r"\[[^]]*\]", "", field_path).split("."):
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def resolved_descriptor(path: Path) -> tuple[object, list[tuple[Path, object]]]:
    """The JSON of the descriptor at `path` with its bases merged in, and the chain it came from: each file
    with its own JSON, most basic first."""
    chain = _inheritance_chain(path)
    data = chain[0][1]
    for _, own in chain[1:]:
        data = merged_descriptor(data, own) if isinstance(data, dict) and isinstance(own, dict) else own
    return data, chain


def descriptor_files(path: Path) -> list[Path]:
    """The files the descriptor at `path` resolves from: its own and its bases', in the same folder."""
    return [p for p, _ in _inheritance_chain(path)]


def origin_of(chain: list[tuple[Path, object]], field_path: str) -> Path | None:
    """The file of `chain` (as resolved_descriptor returns it) whose own JSON last states `field_path`."""
    return next((p for p, own in reversed(chain) if field_path and _set_in(own, field_path)), None)
