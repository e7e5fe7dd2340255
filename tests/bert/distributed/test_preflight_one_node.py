"""The pre-flight of one node: what this host lacks for the run (the GPUs, the dataset, the checkpoint, room for
the results), one line each without a node to name, and what it found when nothing is missing. The GPUs a torch
build sees are the hardware here: they are faked, the rest is this host's own."""

import re

import pytest
import torch

from bert.distributed import preflight as pf
from bert.system import load_descriptor


@pytest.fixture
def micro(tmp_path, small_dataset):
    return load_descriptor("cpu_micro").variant({"dataset.dir": str(small_dataset), "dataset.synthetic": None},
                                            name="micro").write(tmp_path / "systems")


def test_a_cuda_run_needs_a_cuda_build_that_sees_a_gpu_per_process(monkeypatch):
    h100 = load_descriptor("dgxh100_1x8")
    assert pf.device_problems(load_descriptor("cpu_micro"), 1) == []
    if torch.version.cuda is None:  # this machine's build: the line a user gets here
        (line,) = pf.device_problems(h100, 8)
        assert line.startswith(f"dgxh100_1x8 runs on CUDA (run.device) but torch {torch.__version__} here is a "
                               "build without CUDA: ")
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    for visible, needed, problem in [(0, 8, "sees no GPU here"), (2, 8, "2 GPU(s) visible here, but dgxh100_1x8 "
                                     "runs 8 process(es) on each node"), (8, 8, None), (1, 1, None)]:
        monkeypatch.setattr(torch.cuda, "device_count", lambda visible=visible: visible)
        found = pf.device_problems(h100, needed)
        assert (found == []) if problem is None else (len(found) == 1 and problem in found[0]), found


def test_one_node_names_each_missing_input_without_a_node(tmp_path, micro, small_dataset):
    with_checkpoint = micro.variant({"init_checkpoint": "phase1/model.pt"})
    outcome = pf.preflight(with_checkpoint, 0, "localhost", tmp_path / "nothing", tmp_path / "logs",
                           checkpoint_dir=tmp_path)
    assert outcome.problems == [
        f"the dataset folder {tmp_path / 'nothing'} does not exist here (DATADIR, else run.dataset.dir): put the "
        "dataset there, or set DATADIR to the folder that holds it",
        f"the checkpoint to start from: CHECKPOINTDIR={tmp_path} holds no model.pt: convert the MLPerf phase-1 "
        f"checkpoint there (`mlperf-bert checkpoint convert model.ckpt-28252 {tmp_path / 'model.pt'}`), or set "
        "CHECKPOINTDIR to the folder that holds model.pt"]
    taken = tmp_path / "a_file"
    taken.write_text("")
    assert pf.preflight(micro, 0, "localhost", None, taken).problems == [
        f"the results folder {taken} is not a folder: set LOGDIR to a folder"]


def test_one_node_ready_says_what_it_found(tmp_path, micro):
    outcome = pf.preflight(micro, 0, "localhost", None, tmp_path / "logs" / "micro")
    assert outcome.problems == []
    assert re.fullmatch(rf"ready: torch {re.escape(pf._torch_version())} \(cpu\), dataset 4 training shard\(s\), "
                        rf"[0-9.]+ MB, results in {re.escape(str(tmp_path / 'logs' / 'micro'))}", outcome.ready)
