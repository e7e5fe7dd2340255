"""`checkpoint convert` and `inspect` on hostile input: a user's file at OUT is never replaced without --force,
weights that are not floating point or not finite are refused, and a malformed safetensors header or an OUT
under a regular file is one line, never a traceback."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bert.checkpoint import load_state, map_to_model, model_shapes
from bert.checkpoint_files import CheckpointError, Source
from bert.model.config import named_config
from bert.model.pretraining import BertForPreTraining
from bert.model.tf_names import tensor_names
from tests.helpers.compliance import cli


@pytest.fixture(scope="module")
def micro_checkpoint(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("checkpoint") / "micro.pt"
    torch.manual_seed(3)
    torch.save(BertForPreTraining(named_config("micro")).state_dict(), path)
    return path


def _convert(src: Path, out: Path, *extra):
    return cli("checkpoint", "convert", src, out, "--model", "micro", *extra)


def _one_line(result) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 1 and len(lines) == 1, result.output
    return lines[0]


def test_convert_never_replaces_a_file_it_did_not_write_without_force(tmp_path, micro_checkpoint):
    notes = tmp_path / "notes.md"
    notes.write_text("# my notes")
    assert _one_line(_convert(micro_checkpoint, notes)) == (
        f"Error: {notes}: already exists and `mlperf-bert checkpoint convert` did not write it; pass --force to "
        "replace it, or choose another OUT")
    assert notes.read_text() == "# my notes"
    assert _convert(micro_checkpoint, notes, "--force").exit_code == 0
    assert "model" in torch.load(notes, weights_only=True)
    assert _convert(micro_checkpoint, notes).exit_code == 0  # its own output: replaced without --force


BAD_WEIGHTS = pytest.mark.parametrize("change, message", [
    (lambda t: t.to(torch.int64), "holds int64, not floating-point weights; this is not a model checkpoint"),
    (lambda t: torch.full_like(t, float("nan")), "holds NaN or infinite values; the checkpoint is damaged"),
])


def _with_bad_weight(micro_checkpoint: Path, change, out: Path) -> Path:
    state = torch.load(micro_checkpoint, weights_only=True)
    state["nsp.weight"] = change(state["nsp.weight"])
    torch.save(state, out)
    return out


@BAD_WEIGHTS
def test_convert_refuses_weights_that_are_not_finite_floats(tmp_path, micro_checkpoint, change, message):
    _with_bad_weight(micro_checkpoint, change, tmp_path / "bad.pt")
    line = _one_line(_convert(tmp_path / "bad.pt", tmp_path / "out.pt"))
    assert line.startswith(f"Error: {tmp_path / 'bad.pt'}: tensor for nsp.weight {message}")
    assert not (tmp_path / "out.pt").exists()


@BAD_WEIGHTS
def test_a_run_refuses_an_init_checkpoint_that_convert_would_refuse(tmp_path, micro_checkpoint, change, message):
    # run.init_checkpoint is read by load_state, not convert: a NaN weight would otherwise start the run.
    bad = _with_bad_weight(micro_checkpoint, change, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match=f"tensor for nsp.weight {message}"):
        load_state(bad, named_config("micro"))


def _safetensors(path: Path, header: bytes, body: bytes = b"\0" * 16) -> Path:
    path.write_bytes(struct.pack("<Q", len(header)) + header + body)
    return path


def _entry(**changes) -> bytes:
    return json.dumps({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16], **changes}}).encode()


@pytest.mark.parametrize("header, message", [
    (_entry(data_offsets=[-16, 0]), "tensor w: data_offsets [-16, 0] are not two whole numbers"),
    (_entry(shape=[-1, 0], data_offsets=[0, 0]), "tensor w: shape [-1, 0] is not a list of whole numbers"),
    (json.dumps({"w": {"dtype": "F32", "shape": [2, 2]}}).encode(),
     "tensor w: data_offsets None are not two whole numbers"),
    (_entry(data_offsets=[0.0, 16.0]), "tensor w: data_offsets [0.0, 16.0] are not two whole numbers"),
    (json.dumps([1, 2]).encode(), "safetensors header is a JSON list, not an object of tensors"),
    (_entry(shape="2x2"), "tensor w: shape '2x2' is not a list of whole numbers"),
    (json.dumps({"w": ["F32"]}).encode(), "tensor w: its header entry is list, not an object"),
    (b"[" * 100_000 + b"]" * 100_000, "safetensors header is nested too deeply to be one"),
    (_entry(shape=[0, 2**64], data_offsets=[0, 0]), "tensor w: shape [0, 18446744073709551616] is not a list of whole "
                                                    "numbers from 0 to 2^63 - 1"),
])
def test_inspect_names_what_is_wrong_with_a_safetensors_header(tmp_path, header, message):
    path = _safetensors(tmp_path / "model.safetensors", header)
    assert _one_line(cli("checkpoint", "inspect", path, "--model", "micro")).startswith(f"Error: {path}: {message}")


def test_an_out_path_under_a_regular_file_is_one_line(tmp_path, micro_checkpoint):
    (tmp_path / "notes.md").write_text("a file, not a folder")
    out = tmp_path / "notes.md" / "model.pt"
    assert _one_line(_convert(micro_checkpoint, out)) == (
        f"Error: {out.parent}: cannot be made a folder: {tmp_path / 'notes.md'} is a file; choose another path")


QKV = "bert.encoder.0.attention.qkv.weight"


@pytest.mark.parametrize("name, change, message", [
    (QKV, lambda t: torch.tensor(1.0), f"does not fit the model: tensor {QKV} has shape [], the model's {QKV} "
                                       "needs [192, 64]"),
    (QKV, lambda t: t[:1], f"does not fit the model: tensor {QKV} has shape [1, 64], the model's {QKV} needs "
                           "[192, 64]"),
    ("nsp.weight", lambda t: t.to(torch.float8_e4m3fn), "tensor for nsp.weight holds float8_e4m3fn; weights load "
                                                        "from float32, float16, bfloat16 or float64"),
    ("nsp.weight", lambda t: t.to_sparse(), "tensor nsp.weight is sparse_coo, not a dense tensor"),
    ("nsp.weight", lambda t: torch.empty(t.shape, device="meta"), "tensor nsp.weight is on the meta device and "
                                                                  "holds no values"),
])
def test_convert_names_a_tensor_it_cannot_take_in_one_line(tmp_path, micro_checkpoint, name, change, message):
    state = torch.load(micro_checkpoint, weights_only=True)
    state[name] = change(state[name])
    torch.save(state, tmp_path / "odd.pt")
    line = _one_line(_convert(tmp_path / "odd.pt", tmp_path / "out.pt"))
    assert line.startswith(f"Error: {tmp_path / 'odd.pt'}: {message}"), line
    assert not (tmp_path / "out.pt").exists()


def test_a_tf_kernel_that_is_no_matrix_is_a_shape_mismatch(micro_checkpoint):
    config = named_config("micro")
    state = torch.load(micro_checkpoint, weights_only=True)
    tensors = {}
    for entry in tensor_names(config):
        tensor = entry.of(state[entry.torch])
        tensor = tensor[:config.vocab_size] if entry.vocab_padded else tensor
        tensors[entry.tf] = tensor.t() if entry.transpose else tensor
    kernel = "bert/pooler/dense/kernel"
    tensors[kernel] = tensors[kernel].reshape(8, 8, 64)
    fit = map_to_model(Source(Path("model.ckpt"), "tensorflow", tensors), config, model_shapes(config))
    assert fit.naming == "tf"
    assert fit.mismatched == [f"tensor {kernel} has shape [8, 8, 64], the model's bert.pooler.weight needs "
                              "[64, 64]"]


@pytest.mark.parametrize("index, message", [
    (b"not an index at all, as long as one" * 4, "not the index of a TensorFlow checkpoint (140 bytes, without its "
                                                 "footer)"),
    (b"\x57\xfb\x80\x8b\x24\x75\x47\xdb", "not the index of a TensorFlow checkpoint (8 bytes, without its footer)"),
])
def test_a_tensorflow_index_cut_short_or_foreign_is_one_line_even_without_tensorflow(tmp_path, index, message):
    prefix = tmp_path / "model.ckpt-28252"
    Path(f"{prefix}.index").write_bytes(index)
    Path(f"{prefix}.data-00000-of-00001").write_bytes(b"\0" * 64)
    line = _one_line(cli("checkpoint", "inspect", prefix, "--model", "micro"))
    assert line.startswith(f"Error: {prefix}.index: {message}"), line


@pytest.mark.parametrize("name, plant, kind", [
    ("model.pt", os.mkfifo, "a named pipe (FIFO)"),
    ("model.ckpt-28252.index", os.mkfifo, "a named pipe (FIFO)"),  # TensorFlow's index: opened to check its footer
    ("model.safetensors", lambda path: path.symlink_to("/dev/zero"), "a device"),
])
def test_a_fifo_or_a_link_to_a_device_is_named_for_what_it_is_never_waited_on(tmp_path, name, plant, kind):
    """A FIFO was "no such checkpoint file", and one named as a TensorFlow index blocked the open forever."""
    path = tmp_path / name
    plant(path)
    proc = subprocess.run([sys.executable, "-m", "bert.cli", "checkpoint", "inspect", str(path), "--model", "micro"],
                          capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.splitlines() == [f"Error: {path}: is {kind}, not a checkpoint file (give a .pt/.bin, a "
                                        ".safetensors file or a TensorFlow checkpoint prefix such as model.ckpt-28252)"]
