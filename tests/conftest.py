"""Fixtures every test folder shares (small synthetic datasets, a subprocess environment, hosts with addresses of
their own), the repository root,
and the raw descriptor JSON of the tests of what the loader refuses. Helper functions that several test modules
import live in tests/helpers/ (and the faults' and compliance tests' own in their conftest.py)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from bert.prep.synthetic.hdf5_corpus import synthesize
from bert.prep.synthetic.text_corpus import TextCorpusSpec, write_text_corpus
from bert.prep.vocab_learning import train_vocab
from bert.system import SyntheticDataSpec, with_run_values
from tests.cluster.netns import HostNetwork, NamespacesUnavailable, host_network

REPO = Path(__file__).resolve().parent.parent
SMALL_SYNTH = SyntheticDataSpec(train_samples=2048, eval_samples=256, shards=4, vocab_size=4096,
                                max_seq_length=64, max_predictions=10, seed=7)


@pytest.fixture(scope="session")
def small_dataset(tmp_path_factory) -> Path:
    """A small synthetic corpus (fixed-length form), shared by the whole session; do not modify it."""
    return synthesize(tmp_path_factory.mktemp("small_dataset"), SMALL_SYNTH)


@pytest.fixture(scope="session")
def text_corpus(tmp_path_factory) -> Path:
    """Synthetic text in the reference layout (train/part-*.txt, eval.txt) and a vocab.txt learnt from it,
    shared by the whole session; do not modify it."""
    root = tmp_path_factory.mktemp("text_corpus")
    write_text_corpus(root, TextCorpusSpec(megabytes=0.6, parts=3, eval_megabytes=0.15, seed=3))
    train_vocab(sorted((root / "train").glob("part-*")), 1500, show_progress=False).write(root / "vocab.txt")
    return root


def unchecked_descriptor(run: Mapping[str, object] | None = None) -> dict:
    """The JSON of systems/cpu_micro.json with run fields set by dotted path (`optimizer.beta_1`) and nothing
    checked: the input of the tests of what the loader refuses, to break further by hand and write with
    write_unchecked. Every valid variant is made with System.variant (and System.write)."""
    return with_run_values(json.loads((REPO / "systems" / "cpu_micro.json").read_text()), run or {})


def write_unchecked(folder: Path, name: str, data: dict) -> Path:
    """`data` as folder/<name>.json, as it is (System.write refuses what does not load)."""
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


def mllog_line(key: str, **metadata) -> str:
    """One :::MLLOG line (for stand-ins of the trainer that must leave a log)."""
    event = {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": key, "value": None,
             "metadata": metadata}
    return f":::MLLOG {json.dumps(event)}"


def copy_dataset(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


@pytest.fixture
def hosts() -> Callable[..., HostNetwork]:
    """hosts(n, names=None): n hosts on one bridge, each with its own address and host name (tests/cluster/netns.py),
    removed with every process on them after the test; the test is skipped where this machine cannot make them."""
    with contextlib.ExitStack() as networks:
        def make(count: int, names: list[str] | None = None) -> HostNetwork:
            try:
                return networks.enter_context(host_network(count, names))
            except NamespacesUnavailable as e:
                pytest.skip(f"no hosts of their own on this machine: {e}")

        yield make
