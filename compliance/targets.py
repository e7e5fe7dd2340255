"""What `check`, `score`, `report` and `review` are given: a result log, a folder of result logs, a submission (an ORG
folder: systems/ and results/), or a folder of submissions (a results repository: ORG folders side by side, other
folders among them); and which of a submission's systems are BERT's (results/<name>/bert/), or picked by name.
"""

from __future__ import annotations

from pathlib import Path

from bert.mlperf_rules import BENCHMARK
from compliance.verdict import TargetError


def is_package(path: Path) -> bool:
    return (path / "systems").is_dir() or (path / "results").is_dir()


def find_packages(path: Path) -> list[Path]:
    """The submissions at PATH: PATH itself, or the ORG folders among its children (a results repository holds
    other folders too: those are passed over)."""
    if is_package(path):
        return [path]
    if not path.is_dir():
        return []
    return [c for c in sorted(path.iterdir()) if c.is_dir() and not c.name.startswith(".") and is_package(c)]


def find_package(path: Path) -> Path | None:
    """The one submission at PATH (itself, or its only ORG child), else None."""
    found = find_packages(path)
    return found[0] if len(found) == 1 else None


def _holds_bert(folder: Path) -> bool:
    bench = folder / BENCHMARK
    return bench.is_dir() or bench.is_symlink()


def bert_systems(org: Path) -> tuple[list[str], list[str]]:
    """(the systems of a package with BERT results, the others), by name: results/<name>/bert/ (or a link there,
    refused later by name) against every other results/<name>/ and systems/<name>.json."""
    results = org / "results"
    folders = sorted(p.name for p in results.iterdir() if p.is_dir()) if results.is_dir() else []
    bert = [name for name in folders if _holds_bert(results / name)]
    described = {p.stem for p in (org / "systems").glob("*.json")} if (org / "systems").is_dir() else set()
    return bert, sorted((set(folders) | described) - set(bert))


def pick_systems(orgs: list[Path], wanted: list[str] | None) -> dict[Path, list[str]] | None:
    """The BERT systems of each package that `wanted` names (a system's name, or ORG/NAME; None: all of them);
    UsageError for a name that no package has."""
    if not wanted:
        return None
    found = {org: bert_systems(org)[0] for org in orgs}
    picked: dict[Path, list[str]] = {}
    for name in dict.fromkeys(wanted):
        hits = [(org, n) for org, names in found.items() for n in names if name in (n, f"{org.name}/{n}")]
        if not hits:
            known = sorted(n for names in found.values() for n in names)
            shown = ", ".join(known[:12]) + (f" and {len(known) - 12} more" if len(known) > 12 else "")
            raise TargetError(f"--system {name}: no such BERT system (results/{name}/{BENCHMARK}/ with "
                              f"systems/{name}.json) here; the BERT systems are: {shown or 'none'}")
        for org, n in hits:
            names = picked.setdefault(org, [])
            names += [] if n in names else [n]
    return picked
