"""Shared fixtures: small synthetic datasets and descriptors written into temporary folders."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from bert.data.synth import synthesize
from bert.system import SyntheticDataSpec

REPO = Path(__file__).resolve().parent.parent
SMALL_SYNTH = SyntheticDataSpec(train_samples=2048, eval_samples=256, shards=4, vocab_size=4096,
                                max_seq_length=64, max_predictions=10, seed=7)


@pytest.fixture(scope="session")
def small_dataset(tmp_path_factory) -> Path:
    """A small synthetic corpus (fixed-length form), shared by the whole session; do not modify it."""
    return synthesize(tmp_path_factory.mktemp("small_dataset"), SMALL_SYNTH)


def descriptor(base: str = "cpu_micro", **run_changes) -> dict:
    """The JSON of a descriptor in systems/, with fields of its run block replaced."""
    data = json.loads((REPO / "systems" / f"{base}.json").read_text())
    data["run"].update(run_changes)
    return data


def write_descriptor(folder: Path, name: str, data: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps(data, indent=2))
    return path


@pytest.fixture
def cpu_env(monkeypatch):
    """An environment for subprocesses that run the CLI on this machine."""
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def copy_dataset(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst
