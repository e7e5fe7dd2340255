"""The repository the tests run in, and copies of it as a fresh clone holds it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def this_python_env() -> dict[str, str]:
    """What makes a copy's bootstrap.sh take this test run's Python and packages instead of installing its own."""
    in_venv = sys.prefix != sys.base_prefix
    return {"MLPERF_BERT_VENV": sys.prefix} if in_venv else {"MLPERF_BERT_SYSTEM_PYTHON": "1"}


def fresh_copy(folder: Path) -> Path:
    """The files git tracks in this repository (as they are in the working tree), copied to `folder`: what a fresh
    clone holds, without the environment, data, logs and results a used checkout gathers."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPO / name
        if source.is_file():  # a file deleted in the working tree but not yet in the index is not copied
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, folder / name)
    return folder
