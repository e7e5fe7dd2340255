"""Fixtures every test folder shares: small synthetic datasets, a subprocess environment, hosts with addresses
of their own. A conftest.py holds fixtures only; what test modules import lives in tests/helpers/."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from bert.descriptor_files import SEARCH_PATH_ENV
from bert.prep.synthetic.hdf5_corpus import synthesize
from bert.prep.synthetic.text_corpus import TextCorpusSpec, write_text_corpus
from bert.prep.vocab_learning import train_vocab
from tests.cluster.netns import HostNetwork, NamespacesUnavailable, host_network
from tests.helpers.datasets import SMALL_SYNTH


@pytest.fixture(scope="session", autouse=True)
def published_descriptors_only():
    """The tests name the published descriptors: a site's search path (MLPERF_BERT_SYSTEMS) set where they run
    must not put its own files in their place, here or in the processes they start."""
    site = os.environ.pop(SEARCH_PATH_ENV, None)
    yield
    if site is not None:
        os.environ[SEARCH_PATH_ENV] = site


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


@pytest.fixture
def cpu_env(monkeypatch):
    """An environment for subprocesses that run the CLI on this machine."""
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


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
