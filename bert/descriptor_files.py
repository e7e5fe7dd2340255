"""Descriptor files: finding one by name, reading it, and resolving the bases it inherits from.

A descriptor is a path, or a name: its file stem, looked up in the search path, the site folders that
MLPERF_BERT_SYSTEMS names (':'-separated, as PATH) and then the published `systems/` of this harness. A site
keeps its own descriptors in folders of its own, so that an upgrade of the harness never meets them.

A descriptor may name a base by its stem (`"base": "dgxh100_1x8"`) and state only what differs. The base is the
file of that stem beside the descriptor, else the first in the search path (a file is never its own base, so a
site's `dgxh100_1x8.json` may refine the published one); merged_descriptor is the one rule by which the two
combine. bert.system validates the result.

The search path is read from the environment here, not passed down: every process that resolves a descriptor
(a rank of the run, `package`, a search worker) must resolve it the same way, and each inherits the variable.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import difflib
import json
import os
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from bert.regular_files import open_regular
from bert.typed_config import ConfigError

SYSTEM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
SYSTEM_NAME_RULE = "letters, digits, '.', '_' and '-', starting with a letter or a digit"
BASE_KEY = "base"  # a descriptor's optional top-level field naming the descriptor it inherits from
SEARCH_PATH_ENV = "MLPERF_BERT_SYSTEMS"  # site folders of descriptors, searched before the published ones
PUBLISHED_SYSTEMS = Path(__file__).resolve().parent.parent / "systems"
# How deep a descriptor's objects and lists may nest: the published ones reach 4 (run.launch.cpu_binding.numa_nodes);
# the limit keeps every reader of the JSON (the merge, the typed fields) far from Python's recursion limit.
MAX_NESTING = 32
MAX_DESCRIPTOR_BYTES = 1 << 20  # the published ones are a few KiB; more is read only up to this


def repository_root(descriptor: Path) -> Path:
    """The root of the descriptor at `descriptor`, to which its relative paths are relative: the folder above its
    systems/ folder, else its own folder."""
    parent = descriptor.resolve().parent
    return parent.parent if parent.name == "systems" else parent


def site_folders() -> list[Path]:
    """The folders MLPERF_BERT_SYSTEMS names, in order; a name that is not a folder is refused."""
    folders = [Path(part) for part in os.environ.get(SEARCH_PATH_ENV, "").split(":") if part]
    for folder in folders:
        if not folder.is_dir():
            raise ConfigError(f"{SEARCH_PATH_ENV}={os.environ[SEARCH_PATH_ENV]}", "", f"{folder} is not a folder; "
                              "name the folders that hold your site's descriptors, separated by ':'")
    return folders


def search_path() -> list[Path]:
    """Where a descriptor's name is looked up: the site folders, then the published systems/."""
    return [*site_folders(), PUBLISHED_SYSTEMS]


def available_descriptors() -> dict[str, Path]:
    """Every descriptor a name reaches, name -> file (a site's file hides a published one of the same name)."""
    found: dict[str, Path] = {}
    for folder in search_path():
        for path in sorted(folder.glob("*.json")):
            found.setdefault(path.stem, path)
    return found


def find_descriptor(name: str | os.PathLike) -> Path:
    """The descriptor file that `name` means: a path as it is (anything ending in .json, or an existing file),
    else the file of that stem in the search path."""
    path = Path(name)
    if path.suffix == ".json" or path.exists():
        return path
    for folder in search_path():
        if (folder / f"{path.name}.json").is_file():
            return folder / f"{path.name}.json"
    available = sorted(available_descriptors())
    close = difflib.get_close_matches(path.name, available, n=1)
    where = " and ".join(str(folder) for folder in search_path())
    raise ConfigError(str(PUBLISHED_SYSTEMS / f"{path.name}.json"), "", "no such descriptor; available: "
                      f"{', '.join(available)} (in {where})" + (f"; did you mean {close[0]!r}?" if close else ""))


def _nesting(data: object) -> int:
    """How deep `data` nests (a scalar: 0), without recursion."""
    deepest, todo = 0, [(data, 1)]
    while todo:
        value, depth = todo.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if children is not None:
            deepest = max(deepest, depth)
            if depth <= MAX_NESTING:
                todo += [(child, depth + 1) for child in children]
    return deepest


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
    too_deep = ConfigError(where, "", f"nests more than {MAX_NESTING} levels of objects or lists (a descriptor "
                           "needs 4, as systems/cpu_tiny.json); is it a descriptor?")
    try:
        with open_regular(path) as f:
            text = f.read(MAX_DESCRIPTOR_BYTES + 1)
    except OSError as e:
        raise ConfigError(where, "", f"cannot be read ({e.strerror or e})") from None
    if len(text) > MAX_DESCRIPTOR_BYTES:
        raise ConfigError(where, "", f"is over {MAX_DESCRIPTOR_BYTES:,} bytes, far more than a descriptor (a few KiB, "
                          "as systems/cpu_tiny.json); is it a descriptor?")
    try:
        data = json.loads(text.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(where, "", "not a text file (not UTF-8); a descriptor is a JSON file like "
                          "systems/cpu_tiny.json") from None
    except json.JSONDecodeError as e:
        raise ConfigError(where, "", f"not valid JSON: {e}") from None
    except ValueError:  # an integer of more digits than Python converts (sys.get_int_max_str_digits)
        raise ConfigError(where, "", f"holds an integer of more than {sys.get_int_max_str_digits():,} digits; a "
                          "descriptor's numbers have a few") from None
    except RecursionError:  # the JSON parser recurses once per level
        raise too_deep from None
    if _nesting(data) > MAX_NESTING:
        raise too_deep
    return data


def merged_descriptor(base: dict, own: Mapping) -> dict:
    """`own` laid over `base`: an object merges key by key, any other value (a list, a number, null) replaces
    the base's. The one rule by which a descriptor inherits from its base; neither input is changed."""
    merged = copy.deepcopy(base)
    _merge_into(merged, own)
    return merged


def _merge_into(base: dict, own: Mapping) -> None:
    """merged_descriptor's rule applied to `base` itself: a chain of bases is merged into one copy, not copied
    once per link."""
    for key, value in own.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge_into(base[key], value)
        else:
            base[key] = copy.deepcopy(value)


def _base_file(path: Path, base: str) -> Path:
    """The file of the base `base` that the descriptor at `path` names: beside it, else in the search path."""
    own = path.resolve()
    folders = [path.parent, *search_path()]
    for folder in folders:
        candidate = folder / f"{base}.json"
        if candidate.is_file() and candidate.resolve() != own:
            return candidate
    where = ", then ".join(dict.fromkeys(str(f) for f in folders))
    raise ConfigError(str(path), BASE_KEY, f"no descriptor {base}.json beside this one to inherit from, nor in "
                      f"the search path (looked in {where}); put it in one of those folders, or add its folder to "
                      f"{SEARCH_PATH_ENV}")


@dataclasses.dataclass
class _ReadOnce:
    """What one command has read: each descriptor's chain (most basic first) and resolved JSON, by its real path."""

    chains: dict[Path, list[tuple[Path, object]]] = dataclasses.field(default_factory=dict)
    resolved: dict[Path, object] = dataclasses.field(default_factory=dict)


_read_once: _ReadOnce | None = None


@contextlib.contextmanager
def descriptors_read_once() -> Iterator[None]:
    """Within it, each descriptor file is read, and each chain of bases merged, once: a command that loads every
    descriptor (`system list`) reread a base for each descriptor that inherits it, so that 5,000 site descriptors
    each naming the one before as its base took 12.5 million reads. Outside it, every load reads the files as
    they are then."""
    global _read_once
    outer, _read_once = _read_once, _read_once or _ReadOnce()
    try:
        yield
    finally:
        _read_once = outer


def _inheritance_chain(path: Path) -> list[tuple[Path, object]]:
    """The descriptor at `path` and the bases it names, most basic first, each with its own JSON (without the
    base key). Each file is read once (and once per command inside descriptors_read_once)."""
    chain: list[tuple[Path, object]] = []  # from `path` down to the most basic, or to one read before
    seen: set[Path] = set()
    known: list[tuple[Path, object]] = []
    while True:
        key = path.resolve()
        if _read_once is not None and key in _read_once.chains:
            known = _read_once.chains[key]
            break
        data = _read_descriptor_json(path)
        if key in seen:
            names = " -> ".join(p.stem for p in [*(p for p, _ in chain), path])
            raise ConfigError(str(chain[0][0]), BASE_KEY, f"the bases form a cycle ({names}); one of them must "
                              "state its values instead of naming a base")
        seen.add(key)
        if not isinstance(data, dict) or BASE_KEY not in data:
            chain.append((path, data))
            break
        base = data[BASE_KEY]
        if not isinstance(base, str) or not SYSTEM_NAME.fullmatch(base):
            raise ConfigError(str(path), BASE_KEY, f"{base!r} must name a descriptor by its file stem, e.g. "
                              "\"dgxh100_1x8\": it is looked up beside this descriptor, then in the folders of "
                              f"{SEARCH_PATH_ENV}, then in the published systems/")
        chain.append((path, {k: v for k, v in data.items() if k != BASE_KEY}))
        path = _base_file(path, base)
    whole = known + list(reversed(chain))
    if _read_once is not None:
        for end in range(len(known), len(whole)):
            _read_once.chains[whole[end][0].resolve()] = whole[:end + 1]
    return whole


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
    start, data = 0, None
    if _read_once is not None:  # the most specific of its bases resolved before, if any
        start = next((i + 1 for i in range(len(chain) - 1, -1, -1) if chain[i][0].resolve() in _read_once.resolved), 0)
        data = copy.deepcopy(_read_once.resolved[chain[start - 1][0].resolve()]) if start else None
    for i, (file, own) in enumerate(chain[start:], start):
        if i > 0 and isinstance(data, dict) and isinstance(own, dict):
            _merge_into(data, own)
        else:
            data = copy.deepcopy(own)
        if _read_once is not None:
            _read_once.resolved[file.resolve()] = copy.deepcopy(data)
    return data, chain


def descriptor_files(path: Path) -> list[Path]:
    """The files the descriptor at `path` resolves from: its own and its bases', most basic first."""
    return [p for p, _ in _inheritance_chain(path)]


def origin_of(chain: list[tuple[Path, object]], field_path: str) -> Path | None:
    """The file of `chain` (as resolved_descriptor returns it) whose own JSON last states `field_path`."""
    return next((p for p, own in reversed(chain) if field_path and _set_in(own, field_path)), None)


def notes_from_elsewhere(path: Path) -> dict[str, Path]:
    """The run.notes topics that the descriptor at `path` takes from a base in another folder (a site's
    descriptor inheriting a published one), topic -> that base: they describe the base's system, not this one."""
    here, inherited = path.resolve().parent, {}
    for file, own in _inheritance_chain(path):
        run = own.get("run") if isinstance(own, dict) else None
        if not isinstance(run, dict) or "notes" not in run:
            continue
        if not isinstance(run["notes"], dict):  # a text replaces every topic
            inherited = {}
            continue
        for topic, text in run["notes"].items():
            if text and file.resolve().parent != here:
                inherited[topic] = file
            else:
                inherited.pop(topic, None)
    return inherited


def as_json(value: object) -> object:
    """A spec dataclass as the JSON object that describes it; anything else as it is."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def with_run_values(data: dict, values: Mapping[str, object]) -> dict:
    """A copy of descriptor JSON `data` with run fields set, each named by its path below the run block
    (`global_batch_size`, `optimizer.beta_1`), and nothing checked: bert.system.Descriptor.variant checks what it
    makes, and the tests of what the loader refuses write the result as it is."""
    data = copy.deepcopy(data)
    for path, value in values.items():
        *parents, name = path.split(".")
        block = data["run"]
        for parent in parents:
            block = block.setdefault(parent, {})
        block[name] = value
    return data
