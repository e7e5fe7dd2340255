"""README.md names only files that exist: every path in it below a top-level entry of the repository."""

import re
import subprocess

import pytest

from tests.helpers.repo import REPO

PLACEHOLDERS = ("my_system",)  # the README's name for a user's own system (systems/my_system.json, logs/my_system)


def _tracked_top_level() -> set[str]:
    try:
        listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the repository's own files are not known")
    return {line.split("/")[0] for line in listed.splitlines()}


def readme_paths_missing(text: str, top_level: set[str]) -> list[str]:
    """The paths in `text` that start at a top-level entry of the repository and do not exist."""
    missing = []
    for token in re.findall(r"[\w.\-/]+", text):
        path = token.rstrip(".,:;").removeprefix("./")
        if "/" not in path or path.split("/")[0] not in top_level or any(p in path for p in PLACEHOLDERS):
            continue
        if not (REPO / path).exists():
            missing.append(path)
    return missing


def test_every_repository_path_the_readme_names_exists():
    top_level = _tracked_top_level()
    assert {"bert", "tests", "benchmarks"} <= top_level
    assert readme_paths_missing((REPO / "README.md").read_text(), top_level) == []
    assert readme_paths_missing("`bert/data/vocab_file.py` and tests/bert/", top_level) == ["bert/data/vocab_file.py"]
