"""Fixtures every test folder shares: small synthetic datasets, a subprocess environment, hosts with addresses
of their own. A conftest.py holds fixtures only; what test modules import lives in tests/helpers/."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from bert.descriptor_files import SEARCH_PATH_ENV
from bert.prep.synthetic.hdf5_corpus import synthesize
from bert.prep.synthetic.text_corpus import TextCorpusSpec, write_text_corpus
from bert.prep.vocab_learning import train_vocab
from compliance.tool_cache import ENV as TOOL_CACHE_ENV
from tests.cluster.netns import HostNetwork, NamespacesUnavailable, host_network
from tests.helpers.datasets import SMALL_SYNTH
from tests.helpers.readme import ReadmeCheckout, readme_commands

# Session fixtures that cost tens of seconds each (ten real runs, a Slurm cluster, a fake-CUDA process): pytest-xdist
# builds a session fixture once per worker, so the tests that use one run on one worker (run_tests.sh's --dist
# loadgroup), and the fixture is built once.
SHARED_ON_ONE_WORKER = ("micro_runs", "slurm", "fake_cuda_run")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook, which turns the marker into the test's group
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        shared = [name for name in SHARED_ON_ONE_WORKER if name in getattr(item, "fixturenames", ())]
        if shared:
            item.add_marker(pytest.mark.xdist_group(shared[0]))
    # The minutes-long tests and groups start first: begun last, one of them would leave the other worker idle.
    items.sort(key=lambda item: not (item.get_closest_marker("long_running") or item.get_closest_marker("xdist_group")))


# pytest exports the running test's id in PYTEST_CURRENT_TEST, and one environment string over 128 KiB makes every
# process the test starts fail with E2BIG ("Argument list too long"): a hostile input of 700,000 characters as a
# parameter is named by its start and its length instead.
LONGEST_PARAMETER_ID = 60


def pytest_make_parametrize_id(config: pytest.Config, val: object, argname: str) -> str | None:
    if isinstance(val, (str, bytes)) and len(val) > LONGEST_PARAMETER_ID:
        start = val[:40] if isinstance(val, str) else val[:40].decode("latin-1")
        return f"{start}...({len(val):,} {'characters' if isinstance(val, str) else 'bytes'})"
    return None


@pytest.fixture(scope="session", autouse=True)
def published_descriptors_only():
    """The tests name the published descriptors: a site's search path (MLPERF_BERT_SYSTEMS) set where they run
    must not put its own files in their place, here or in the processes they start."""
    site = os.environ.pop(SEARCH_PATH_ENV, None)
    yield
    if site is not None:
        os.environ[SEARCH_PATH_ENV] = site


@pytest.fixture(scope="session", autouse=True)
def tool_cache_of_the_session(tmp_path_factory):
    """What the official tools said of a system is kept between commands (compliance.tool_cache): in a folder of
    the session's, here and in the processes the tests start, never in the user's cache."""
    os.environ[TOOL_CACHE_ENV] = str(tmp_path_factory.mktemp("tool_cache"))


@pytest.fixture(scope="session")
def small_dataset(tmp_path_factory) -> Path:
    """A small synthetic corpus (fixed-length form), shared by the whole session; do not modify it."""
    return synthesize(tmp_path_factory.mktemp("small_dataset"), SMALL_SYNTH)


@pytest.fixture(scope="session")
def readme_checkout(tmp_path_factory) -> ReadmeCheckout:
    """A fresh copy of the repository where the README's commands run (tests/helpers/readme.py), shared by the whole
    session."""
    return ReadmeCheckout.make(tmp_path_factory.mktemp("readme"))


@pytest.fixture(scope="session")
def micro_system_path(readme_checkout) -> Path:
    """The descriptor of the ten runs: systems/cpu_micro.json with a development target that its runs reach after
    an eval or two (MICRO_EVAL), named cpu_micro and kept in the README's site folder."""
    return readme_checkout.sites / "cpu_micro.json"


@pytest.fixture(scope="session")
def micro_runs(readme_checkout) -> Path:
    """The README's `SEED=7 NEXP=10 ./run_and_time.sh cpu_micro` (a few seconds a run on a quiet machine) in its
    fresh copy: the folder of result_0..9.txt; what the command printed is kept beside it, in ten_runs.out."""
    (line,) = [line for line in readme_commands() if "NEXP=10" in line]
    try:  # the limit only guards against a hang: a busy shared machine can make the ten runs slow
        proc = readme_checkout.run(line, timeout=3600)
    except subprocess.TimeoutExpired:
        done = sorted(p.name for p in (readme_checkout.root / "logs" / "cpu_micro").glob("result_*.txt"))
        pytest.fail(f"ten cpu_micro runs took over an hour (logs so far: {', '.join(done) or 'none'})")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (readme_checkout.root / "ten_runs.out").write_text(proc.stdout)
    return readme_checkout.root / "logs" / "cpu_micro"


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
