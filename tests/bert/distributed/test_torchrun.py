"""torchrun as the launch plans start it (bert.distributed.torchrun): a run that ends returns 0; one stopped by a
signal says so in one line and returns 128 + the signal's number instead of a traceback. torchrun's own main
stands in: starting real ranks is the launch tests' work (tests/faults/test_node_loss.py)."""

import signal

import pytest
from torch.distributed.elastic.multiprocessing.api import SignalException

from bert.distributed import torchrun


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
