"""What the first rank would refuse, found by the pre-flight (bert.launch.readiness) with the rank's own
checks taken the cheap way: the dataset against its manifest without one HDF5 header read, the checkpoint
mapped, the compiler asked. Through run_and_time.sh: tests/faults/test_wrapper_input.py."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from bert.data import dataset as dataset_module
from bert.data import manifest as manifest_module
from bert.launch.readiness import checkpoint_refusals, dataset_refusals, setup_refusals
from bert.model import fp8 as fp8_module
from bert.model.pretraining import BertForPreTraining
from bert.system import load_descriptor
from tests.helpers.compile import skip_unless_compile_works
from tests.helpers.datasets import copy_dataset


@pytest.fixture
def micro(small_dataset):
    return load_descriptor("cpu_micro").variant({"dataset.dir": str(small_dataset), "dataset.synthetic": None})


def _no_header_read(monkeypatch):
    def refuse(path):
        raise AssertionError(f"the pre-flight opened {path}")
    monkeypatch.setattr(dataset_module, "shard_header", refuse)
    monkeypatch.setattr(manifest_module, "shard_header", refuse)


def test_the_dataset_is_judged_by_its_manifest_without_reading_a_header(tmp_path, small_dataset, micro,
                                                                          monkeypatch):
    _no_header_read(monkeypatch)
    assert dataset_refusals(micro, None) == []
    too_many = micro.variant({"eval.samples": 512})  # the manifest's counts stand in for the headers'
    assert dataset_refusals(too_many, None) == [f"{small_dataset / 'eval.hdf5'}: has 256 eval samples, fewer than "
                                                "run.eval.samples = 512"]
    data = copy_dataset(small_dataset, tmp_path / "data")
    shard = sorted((data / "train").glob("*.hdf5"))[0]
    with open(shard, "ab") as f:
        f.write(b"\0")
    (line,) = dataset_refusals(micro, data)
    assert line.startswith(f"{shard}: {shard.stat().st_size} bytes, the manifest says ")


def test_a_checkpoint_the_rank_would_refuse_is_one_line_and_a_good_one_none(tmp_path, micro):
    path = tmp_path / "model.pt"
    assert checkpoint_refusals(micro, None) == []
    torch.manual_seed(0)
    state = BertForPreTraining(micro.model_config()).state_dict()
    torch.save({"model": state}, path)
    assert checkpoint_refusals(micro, path) == []
    state["nsp.weight"][0, 0] = float("nan")
    torch.save({"model": state}, path)
    assert checkpoint_refusals(micro, path) == [f"the checkpoint to start from (run.init_checkpoint): {path}: tensor "
                                                "for nsp.weight holds NaN or infinite values; the checkpoint is "
                                                "damaged (or saved from a diverged run)"]


def test_fp8_without_an_implementation_is_what_encoder_to_fp8_refuses(micro, monkeypatch):
    fp8 = micro.variant({"precision": "fp8"})
    monkeypatch.setattr(fp8_module, "fp8_backend", lambda: None)
    (line,) = setup_refusals(fp8)
    with pytest.raises(fp8_module.Fp8Unavailable) as refused:
        fp8_module.encoder_to_fp8(torch.nn.Sequential(), torch.device("cpu"))
    assert line == str(refused.value)
    assert setup_refusals(micro) == []
    if not torch.cuda.is_available():  # a CUDA descriptor here: the device's own line says what is missing
        cuda = load_descriptor("h200_1x1").variant({"precision": "fp8", "compile": "required"})
        assert setup_refusals(cuda) == []


COMPILE = "import torch; torch.compile(lambda t: t * 2 + 1, fullgraph=True)(torch.ones(4)); print('compiled')"


def test_a_compiler_that_fails_is_found_as_the_real_compile_finds_it(tmp_path, micro):
    """CXX, the compiler inductor takes, set to one that fails: a real torch.compile fails, and the pre-flight's
    question to inductor names the same error without compiling anything."""
    required = micro.variant({"compile": "required"})
    env = dict(os.environ, CXX="/bin/false")
    ask = ("import sys; from bert.launch.readiness import setup_refusals; from bert.system import "
           "load_descriptor; print(*setup_refusals(load_descriptor(sys.argv[1])), sep='\\n')")
    asked = subprocess.run([sys.executable, "-c", ask, str(required.write(tmp_path).path)],
                           env=env, capture_output=True, text=True, timeout=120)
    compiled = subprocess.run([sys.executable, "-c", COMPILE], env=env, capture_output=True, text=True, timeout=300)
    assert compiled.returncode != 0 and "InvalidCxxCompiler: No working C++ compiler found" in compiled.stderr
    assert asked.returncode == 0 and ('failed to compile and run.compile is "required": InvalidCxxCompiler: No '
                                      "working C++ compiler found in torch._inductor.config.cpp.cxx: (None, "
                                      "'/bin/false')") in asked.stdout, asked.stderr[-2000:]
    skip_unless_compile_works()
    assert setup_refusals(required) == []
