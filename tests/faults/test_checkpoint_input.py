"""`checkpoint convert` and `inspect` on hostile input: a user's file at OUT is never replaced without --force,
weights that are not floating point or not finite are refused, and a malformed safetensors header or an OUT
under a regular file is one line, never a traceback."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
import torch

from bert.checkpoint import CheckpointError, load_state
from bert.model.config import named_config
from bert.model.pretraining import BertForPreTraining
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
])
def test_inspect_names_what_is_wrong_with_a_safetensors_header(tmp_path, header, message):
    path = _safetensors(tmp_path / "model.safetensors", header)
    assert _one_line(cli("checkpoint", "inspect", path, "--model", "micro")).startswith(f"Error: {path}: {message}")


def test_an_out_path_under_a_regular_file_is_one_line(tmp_path, micro_checkpoint):
    (tmp_path / "notes.md").write_text("a file, not a folder")
    out = tmp_path / "notes.md" / "model.pt"
    assert _one_line(_convert(micro_checkpoint, out)) == (
        f"Error: {out.parent}: cannot be made a folder: {tmp_path / 'notes.md'} is a file; choose another path")
