"""The README and the pages of docs/ are true of the code: every path they name exists, every `mlperf-bert`
command and descriptor field they name is one the harness has, every link lands on a file, the README stays a
five-minute read, and no file of the project speaks in issue numbers."""

import dataclasses
import re
import subprocess
import typing

import click
import pytest

from bert.cli import main
from bert.system import RunSpec
from tests.helpers.repo import REPO

PLACEHOLDERS = ("my_system",)  # the docs' name for a user's own system (systems/my_system.json, logs/my_system)
MADE_BY_COMMANDS = ("logs/",)  # what the commands the docs show write (logs/cpu_micro after its runs)
README_LINES = 150
PAGES = sorted((REPO / "docs").glob("*.md"))
DOCS = [REPO / "README.md", *PAGES]


def _tracked() -> list[str]:
    try:
        listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the repository's own files are not known")
    return listed.splitlines()


def paths_missing(text: str, top_level: set[str]) -> list[str]:
    """The paths in `text` that start at a top-level entry of the repository and do not exist."""
    missing = []
    for token in re.findall(r"[\w.\-/]+", text):
        path = token.rstrip(".,:;").removeprefix("./")
        if "/" not in path or path.split("/")[0] not in top_level or any(p in path for p in PLACEHOLDERS) \
                or path.startswith(MADE_BY_COMMANDS):
            continue
        if not (REPO / path).exists():
            missing.append(path)
    return missing


def commands_unknown(text: str) -> list[str]:
    """Each `mlperf-bert COMMAND [SUBCOMMAND]` in `text` that the command line does not have."""
    unknown = []
    for command, sub in re.findall(r"mlperf-bert ([a-z][\w-]*)(?: ([a-z][\w-]*))?", text):
        found = main.commands.get(command)
        if found is None:
            unknown.append(command)
        elif isinstance(found, click.Group) and sub and sub not in found.commands:
            unknown.append(f"{command} {sub}")
    return unknown


def _field_exists(path: list[str], cls: type) -> bool:
    hints = typing.get_type_hints(cls)
    name, rest = path[0], path[1:]
    if name not in hints:
        return False
    kinds = [hints[name], *typing.get_args(hints[name])]
    nested = next((k for k in kinds if dataclasses.is_dataclass(k)), None)
    if nested is not None and rest:
        return _field_exists(rest, nested)
    # a map (run.launch.env.NAME, run.model_overrides.FIELD, run.search.FIELD, run.notes.TOPIC) or a leaf
    return not rest or any(typing.get_origin(k) is dict for k in kinds)


def fields_unknown(text: str) -> list[str]:
    """Each descriptor field `run.a.b` named in `text` that RunSpec does not have."""
    unknown = []
    for dotted in re.findall(r"(?<![\w.])run\.([a-z_][\w.]*[a-z_0-9])", text):
        if not _field_exists(dotted.split("."), RunSpec):
            unknown.append(f"run.{dotted}")
    return unknown


def test_the_readme_is_short_and_links_every_page():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) < README_LINES
    assert PAGES, "docs/ holds the manual"
    for page in PAGES:
        assert f"docs/{page.name}" in readme, f"the README does not link {page.name}"


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_what_a_page_names_exists(doc):
    text = doc.read_text()
    top_level = {line.split("/")[0] for line in _tracked()}
    assert paths_missing(text, top_level) == []
    assert commands_unknown(text) == []
    assert fields_unknown(text) == []
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if not re.match(r"[a-z]+://", target):
            assert (doc.parent / target).exists(), f"{doc.name} links {target}"


def test_the_checks_find_what_does_not_exist():
    top_level = {"bert", "tests"}
    assert paths_missing("`bert/data/vocab_file.py` and tests/bert/", top_level) == ["bert/data/vocab_file.py"]
    assert commands_unknown("mlperf-bert data verify, mlperf-bert data shred, mlperf-bert fly") == [
        "data shred", "fly"]
    assert fields_unknown("run.optimizer.beta_1, run.launch.env.NCCL_IB_HCA, run.optimizer.beta3, run.evals") == [
        "run.optimizer.beta3", "run.evals"]


def test_no_file_of_the_project_names_an_issue_number():
    """Issue numbers mean nothing to a user, nor do the words of the machines the harness was made on (a GPU
    "lent" to a session): a file says what is meant instead."""
    pattern = re.compile(r"\bissues? #?\d+|\blent GPU\b|\bGPU is lent\b|\ba lend\b", re.IGNORECASE)
    found = []
    for name in _tracked():
        path = REPO / name
        if path.suffix in (".npz", ".hdf5", ".gz", ".png") or not path.is_file():
            continue
        text = path.read_text(errors="replace")
        found += [f"{name}: {m.group(0)}" for m in pattern.finditer(text)]
    assert found == []
