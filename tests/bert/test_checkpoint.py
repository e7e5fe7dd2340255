"""Checkpoint conversion: every source layout round-trips a small model through convert and load; a checkpoint
that does not fit the model is one line naming the file and the tensors."""

from pathlib import Path

import pytest
import torch

from bert.checkpoint import convert, load_into
from bert.checkpoint_files import CheckpointError
from bert.model.config import named_config
from bert.model.pretraining import BertForPreTraining
from bert.model.tf_names import hf_name, tensor_names, to_hf_state_dict
from tests.helpers.checkpoints import hf_checkpoint_state, write_safetensors

# An odd vocabulary so that the padding rows (4093 -> 4096) are exercised.
CONFIG = named_config("micro", vocab_size=4093)


@pytest.fixture(scope="module")
def reference() -> dict[str, torch.Tensor]:
    torch.manual_seed(11)
    state = BertForPreTraining(CONFIG).state_dict()
    # Padding rows are never targets; a converted checkpoint carries zeros there.
    for name in ("bert.embeddings.word_embeddings.weight", "mlm.bias"):
        state[name][CONFIG.vocab_size:] = 0
    return state


def _write_source(kind: str, folder: Path, reference: dict[str, torch.Tensor]) -> Path:
    if kind == "own":
        torch.save(reference, folder / "own.pt")
        return folder / "own.pt"
    if kind == "own, query/key/value apart":  # written before query, key and value became one parameter
        torch.save({e.unfused: e.of(reference[e.torch]).clone() for e in tensor_names(CONFIG)}, folder / "apart.pt")
        return folder / "apart.pt"
    if kind == "nvidia":  # {'model': ...} with transformers' names, vocabulary already padded, DDP prefix
        hf = to_hf_state_dict(reference, CONFIG)
        model = {f"module.{hf_name(e.tf)}": e.of(reference[e.torch]) if e.vocab_padded else hf[hf_name(e.tf)]
                 for e in tensor_names(CONFIG)}
        torch.save({"model": model, "epoch": 3}, folder / "nvidia.pt")
        return folder / "nvidia.pt"
    if kind == "tf_names":  # the TF checkpoint's tensors (kernels [in, out], no padding rows) in a torch file
        tf = {e.tf: (reference[e.torch][: CONFIG.vocab_size] if e.vocab_padded else e.of(reference[e.torch]))
              for e in tensor_names(CONFIG)}
        tf = {e.tf: tf[e.tf].t().contiguous() if e.transpose else tf[e.tf] for e in tensor_names(CONFIG)}
        torch.save(tf, folder / "tf_names.pt")
        return folder / "tf_names.pt"
    if kind == "hf_bin":
        torch.save(hf_checkpoint_state(reference, CONFIG), folder / "pytorch_model.bin")
        return folder / "pytorch_model.bin"
    if kind == "hf_safetensors":
        write_safetensors(folder / "model.safetensors", hf_checkpoint_state(reference, CONFIG))
        return folder / "model.safetensors"
    raise AssertionError(kind)


def _assert_equal_model(path: Path, reference: dict[str, torch.Tensor]) -> None:
    model = BertForPreTraining(CONFIG)
    load_into(model, path, CONFIG)
    state = model.state_dict()
    assert state.keys() == reference.keys()
    for name, tensor in reference.items():
        assert torch.equal(state[name], tensor), name


@pytest.mark.parametrize("kind", ["own", "own, query/key/value apart", "nvidia", "tf_names", "hf_bin",
                                  "hf_safetensors"])
def test_each_layout_round_trips_through_convert_and_load(kind, tmp_path, reference):
    src = _write_source(kind, tmp_path, reference)
    out = tmp_path / "converted" / "init.pt"
    fit = convert(src, out, CONFIG)
    assert fit.fits and not fit.unexpected
    assert not list(tmp_path.joinpath("converted").glob(".*.tmp*")) and out.is_file()  # no temporary left behind
    _assert_equal_model(out, reference)


def test_tensorflow_checkpoint_round_trips(tmp_path, reference):
    tf = pytest.importorskip("tensorflow", reason="TensorFlow is the optional `tf` extra, not installed here")
    prefix = tmp_path / "model.ckpt"
    with tf.Graph().as_default():
        for entry in tensor_names(CONFIG):
            tensor = entry.of(reference[entry.torch])
            tensor = tensor[: CONFIG.vocab_size] if entry.vocab_padded else tensor
            tensor = tensor.t() if entry.transpose else tensor
            tf.compat.v1.Variable(tensor.numpy(), name=entry.tf)
            tf.compat.v1.Variable(tensor.numpy() * 0, name=f"{entry.tf}/adam_m")
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saved = tf.compat.v1.train.Saver().save(session, str(prefix), global_step=28252)
    fit = convert(Path(saved), tmp_path / "init.pt", CONFIG)
    assert fit.naming == "tf" and len(fit.ignored) == len(tensor_names(CONFIG))
    _assert_equal_model(tmp_path / "init.pt", reference)


def test_wrong_shape_fails_naming_file_tensor_and_shapes(tmp_path, reference):
    bad = dict(reference)
    bad["bert.encoder.0.intermediate.weight"] = torch.zeros(32, 64)
    torch.save(bad, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError) as e:
        convert(tmp_path / "bad.pt", tmp_path / "out.pt", CONFIG)
    message = str(e.value)
    assert "bad.pt" in message and "bert.encoder.0.intermediate.weight" in message
    assert "[32, 64]" in message and "[128, 64]" in message and "\n" not in message
    assert not (tmp_path / "out.pt").exists() and len(list(tmp_path.iterdir())) == 1


def test_missing_tensors_fail_with_their_names(tmp_path, reference):
    partial = {k: v for k, v in reference.items() if not k.startswith("nsp.")}
    torch.save(partial, tmp_path / "partial.pt")
    with pytest.raises(CheckpointError, match=r"partial.pt: .*2 parameter\(s\) missing .*nsp.weight"):
        load_into(BertForPreTraining(CONFIG), tmp_path / "partial.pt", CONFIG)
