"""`mlperf-bert checkpoint inspect | convert` (bert.cli.checkpoint): what a checkpoint holds against the model of
a descriptor, and a convert that refuses one with missing tensors."""

import torch
from click.testing import CliRunner

from bert.cli import main
from bert.model.config import named_config
from bert.model.pretraining import BertForPreTraining
from bert.system import load_descriptor
from tests.helpers.checkpoints import hf_checkpoint_state

CONFIG = named_config("micro", vocab_size=4093)


def test_inspect_lists_tensors_missing_and_unexpected(tmp_path):
    torch.manual_seed(11)
    hf = hf_checkpoint_state(BertForPreTraining(CONFIG).state_dict(), CONFIG)
    del hf["cls.seq_relationship.bias"]
    hf["bert.extra.weight"] = torch.zeros(3)
    torch.save({"model": hf}, tmp_path / "ckpt.pt")
    micro = load_descriptor("cpu_micro").variant({"model_overrides.vocab_size": CONFIG.vocab_size}, name="micro")
    micro = micro.write(tmp_path).path
    result = CliRunner().invoke(main, ["checkpoint", "inspect", str(tmp_path / "ckpt.pt"), "--system", str(micro)])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert "pytorch {'model': ...}" in lines[0] and "huggingface names" in lines[0]
    assert any(line.split()[:3] == ["bert.embeddings.word_embeddings.weight", "float32", "[4093,"] for line in lines)
    section = {title: lines.index(title) for title in ("missing: 1", "unexpected: 1", "ignored (not parameters): 3")}
    assert lines[section["missing: 1"] + 1].strip() == "nsp.bias"
    assert lines[section["unexpected: 1"] + 1].strip() == "bert.extra.weight"
    converted = CliRunner().invoke(main, ["checkpoint", "convert", str(tmp_path / "ckpt.pt"), str(tmp_path / "o.pt"),
                                          "--system", str(micro)])
    assert converted.exit_code == 1 and "nsp.bias" in converted.output and not (tmp_path / "o.pt").exists()
