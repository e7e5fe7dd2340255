"""The reference's own TF1 checkpoint (written by its saver after two LAMB steps, as model.ckpt-28252 was after
28,252: fixtures/make_reference_fixtures.py) converts: every weight lands where it belongs, and the LAMB slots,
the global step and the beta powers are skipped and listed by `mlperf-bert checkpoint inspect`."""

from __future__ import annotations

import numpy as np
import torch
from click.testing import CliRunner

from bert.checkpoint import convert
from bert.checkpoint_files import read_source
from bert.cli import main
from bert.model.tf_names import tensor_names
from tests.bert.reference.reference_run import RUN, install_tf_reader, reference_checkpoint, system

COUNTERS = {"global_step", "beta1_power", "beta2_power"}


def _skipped_names() -> set[str]:
    weights = {entry.tf for entry in tensor_names(system(0.01).model_config())}
    return {f"{name}/{slot}" for name in weights for slot in ("LAMB", "LAMB_1")} | COUNTERS


def test_the_references_checkpoint_holds_what_its_saver_writes():
    """The fixture is what the reference writes: weights, a slot pair each, and 0-d counters that TensorFlow
    returns as numpy scalars (which the reader once refused: expected np.ndarray, got numpy.float32)."""
    values = reference_checkpoint()
    weights = {entry.tf for entry in tensor_names(system(0.01).model_config())}
    assert set(values) == weights | _skipped_names()
    assert {name for name, v in values.items() if isinstance(v, np.generic)} == COUNTERS
    assert values["global_step"] == RUN["phase1_steps"]
    assert values["beta1_power"] == np.float32(0.9) ** (RUN["phase1_steps"] + 1)


def test_the_references_checkpoint_converts_tensor_for_tensor(tmp_path, monkeypatch):
    prefix = install_tf_reader(monkeypatch, tmp_path)
    config = system(0.01).model_config()
    source = read_source(prefix)
    assert source.tensors["global_step"].shape == () and source.tensors["global_step"].item() == 2
    fit = convert(prefix, tmp_path / "model.pt", config)
    assert fit.naming == "tf" and not fit.unexpected and not fit.missing
    assert set(fit.ignored) == _skipped_names()
    state = torch.load(tmp_path / "model.pt", weights_only=True)["model"]
    values = reference_checkpoint()
    assert set(state) == {entry.torch for entry in tensor_names(config)}
    for entry in tensor_names(config):
        expected = torch.from_numpy(values[entry.tf])
        torch.testing.assert_close(entry.of(state[entry.torch]), expected.t() if entry.transpose else expected,
                                   rtol=0, atol=0)


def test_inspect_lists_the_skipped_slots_and_counters(tmp_path, monkeypatch):
    prefix = install_tf_reader(monkeypatch, tmp_path)
    descriptor = system(0.01).write(tmp_path / "systems")
    result = CliRunner().invoke(main, ["checkpoint", "inspect", str(prefix), "--system", str(descriptor.path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    weights = len({entry.torch for entry in tensor_names(descriptor.model_config())})  # parameters of this model
    assert f"model parameters found: {weights} of {weights}" in lines
    ignored = lines.index(f"ignored (not parameters): {len(_skipped_names())}")
    assert {line.strip() for line in lines[ignored + 1:]} == _skipped_names()
    assert any(line.split() == ["global_step", "int64", "[]"] for line in lines)
