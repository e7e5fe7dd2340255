"""Reading checkpoint files as published (bert.checkpoint_files): a file cut short or a TensorFlow checkpoint read
without TensorFlow is one line naming the file and the fix."""

import sys
from pathlib import Path

import pytest
import torch

from bert.checkpoint_files import TF_INSTALL_HINT, CheckpointError, read_safetensors, read_source
from tests.helpers.checkpoints import write_safetensors
from tests.helpers.tfrecords import write_tf_index_stub


def test_a_tensorflow_checkpoint_cut_short_is_one_line(tmp_path):
    tf = pytest.importorskip("tensorflow", reason="TensorFlow is the optional `tf` extra, not installed here")
    with tf.Graph().as_default():
        tf.compat.v1.Variable(torch.zeros(2, 64).numpy(), name="cls/seq_relationship/output_weights")
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saved = Path(tf.compat.v1.train.Saver().save(session, str(tmp_path / "model.ckpt")))
    (data,) = tmp_path.glob("model.ckpt.data-*")
    data.write_bytes(data.read_bytes()[:10])
    with pytest.raises(CheckpointError, match=r"model.ckpt: TensorFlow cannot read this checkpoint \(IndexError: Read "
                                              r"less bytes than requested\); it is damaged or incomplete"):
        read_source(saved)


def test_tensorflow_checkpoint_without_tensorflow_names_the_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorflow", None)  # import fails as if not installed
    prefix = tmp_path / "model.ckpt-28252"
    write_tf_index_stub(prefix)
    with pytest.raises(CheckpointError) as e:
        read_source(prefix)
    assert str(prefix) in str(e.value) and TF_INSTALL_HINT in str(e.value)


def test_safetensors_reader_rejects_a_truncated_file(tmp_path):
    path = tmp_path / "x.safetensors"
    write_safetensors(path, {"a": torch.arange(6, dtype=torch.float32).reshape(2, 3)})
    assert torch.equal(read_safetensors(path)["a"], torch.arange(6.0).reshape(2, 3))
    path.write_bytes(path.read_bytes()[:-4])
    with pytest.raises(CheckpointError, match="x.safetensors: tensor a: data offsets"):
        read_safetensors(path)
