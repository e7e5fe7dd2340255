"""torchrun as the launch plans start it (bert.launch.torchrun): a run that ends returns 0; one stopped by a
signal says so in one line and returns 128 + the signal's number instead of a traceback; ranks that share a node
get torchrun's OMP_NUM_THREADS without its banner. torchrun's own main stands in, but where the banner is proven
absent: starting real training ranks is the launch tests' work (tests/faults/test_node_loss.py)."""

import os
import signal
import subprocess
import sys

import pytest
from torch.distributed.elastic.multiprocessing.api import SignalException

from bert.launch import torchrun
from tests.helpers.repo import REPO


def test_a_finished_run_returns_0_with_torchruns_arguments(monkeypatch):
    seen = []
    monkeypatch.setattr(torchrun, "main", seen.append)
    assert torchrun.run(["--standalone", "--nproc-per-node=2", "-m", "bert.train"]) == 0
    assert seen == [["--standalone", "--nproc-per-node=2", "-m", "bert.train"]]


def test_a_signal_ends_with_one_line_and_128_plus_its_number(monkeypatch, capsys):
    def stopped(argv):
        raise SignalException("received SIGTERM", sigval=signal.SIGTERM)

    monkeypatch.setattr(torchrun, "main", stopped)
    assert torchrun.run([]) == 128 + signal.SIGTERM
    assert capsys.readouterr().err == "torchrun: stopped by SIGTERM, which the ranks were passed\n"


def test_any_other_failure_is_raised(monkeypatch):
    def failed(argv):
        raise RuntimeError("rendezvous failed")

    monkeypatch.setattr(torchrun, "main", failed)
    with pytest.raises(RuntimeError, match="rendezvous failed"):
        torchrun.run([])


@pytest.mark.parametrize("argv, given, ranks_get", [
    (["--standalone", "--nproc_per_node=2", "-m", "bert.cli"], None, "1"),
    (["--nproc-per-node", "8", "-m", "bert.cli"], None, "1"),
    (["--nproc_per_node=1", "-m", "bert.cli"], None, None),  # one rank a node: torchrun leaves it unset too
    (["--nproc_per_node=2", "-m", "bert.cli"], "3", "3"),  # the user's value is never changed
])
def test_omp_threads_are_torchruns_default_where_unset(argv, given, ranks_get):
    environ = {} if given is None else {"OMP_NUM_THREADS": given}
    torchrun.set_default_threads(argv, environ)
    assert environ.get("OMP_NUM_THREADS") == ranks_get


def test_real_torchrun_gives_its_ranks_one_thread_without_its_banner(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    proc = subprocess.run([sys.executable, "-m", "bert.launch.torchrun", "--standalone", "--nproc_per_node=2",
                           "--no-python", "sh", "-c", 'echo "rank $RANK threads $OMP_NUM_THREADS"'],
                          env=env, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.splitlines()) == ["rank 0 threads 1", "rank 1 threads 1"]
    assert "OMP_NUM_THREADS" not in proc.stderr
