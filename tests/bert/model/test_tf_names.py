import pytest
import torch

from bert.checkpoint import map_to_model, model_shapes
from bert.checkpoint_files import Source
from bert.model.config import named_config
from bert.model.pretraining import BertForPreTraining
from bert.model.tf_names import HF_TIED, TensorName, hf_name, hf_to_torch, tensor_names, to_hf_state_dict


def _by_tf_name(config) -> dict[str, TensorName]:
    return {entry.tf: entry for entry in tensor_names(config)}


def _meta_model(name: str) -> BertForPreTraining:
    with torch.device("meta"):
        return BertForPreTraining(named_config(name))


def test_large_table_names_every_parameter_once():
    config = named_config("large")
    params = dict(_meta_model("large").named_parameters())
    table = tensor_names(config)
    assert {e.torch for e in table} == set(params)
    assert len({e.tf for e in table}) == len(table) == 398
    assert len({(e.torch, e.part) for e in table}) == len(table)
    # Every parameter is covered exactly by its parts: query, key and value stack along the first dimension.
    for name, p in params.items():
        entries = [e for e in table if e.torch == name]
        assert [e.part for e in entries] == list(range(len(entries))) and {e.parts for e in entries} == {len(entries)}
        assert sum(e.of(p).shape[0] for e in entries) == p.shape[0], name


def test_large_table_shapes_follow_the_reference():
    config = named_config("large")
    params = dict(_meta_model("large").named_parameters())
    by_tf = _by_tf_name(config)
    kernel = by_tf["bert/encoder/layer_23/attention/self/query/kernel"]
    assert kernel.transpose and kernel.of(params[kernel.torch]).shape == (1024, 1024)
    value = by_tf["bert/encoder/layer_23/attention/self/value/bias"]
    assert value.torch == "bert.encoder.23.attention.qkv.bias" and (value.part, value.parts) == (2, 3)
    assert params[value.torch].shape == (3072,) and value.unfused == "bert.encoder.23.attention.value.bias"
    ffn = by_tf["bert/encoder/layer_0/intermediate/dense/kernel"]
    # TF stores [in, out] = [1024, 4096]; torch Linear holds [out, in].
    assert params[ffn.torch].shape == (4096, 1024) and ffn.transpose
    nsp = by_tf["cls/seq_relationship/output_weights"]
    assert params[nsp.torch].shape == (2, 1024) and not nsp.transpose
    word = by_tf["bert/embeddings/word_embeddings"]
    assert word.vocab_padded and params[word.torch].shape == (30528, 1024)
    assert by_tf["cls/predictions/output_bias"].vocab_padded
    assert by_tf["bert/encoder/layer_5/output/LayerNorm/gamma"].torch == "bert.encoder.5.layer_norm.weight"


def test_hf_names_follow_the_tf_names():
    by_tf = _by_tf_name(named_config("large"))
    examples = {
        "bert/encoder/layer_23/attention/self/query/kernel": "bert.encoder.layer.23.attention.self.query.weight",
        "bert/encoder/layer_0/output/LayerNorm/gamma": "bert.encoder.layer.0.output.LayerNorm.weight",
        "bert/encoder/layer_5/output/dense/bias": "bert.encoder.layer.5.output.dense.bias",
        "bert/embeddings/word_embeddings": "bert.embeddings.word_embeddings.weight",
        "bert/embeddings/LayerNorm/beta": "bert.embeddings.LayerNorm.bias",
        "cls/predictions/output_bias": "cls.predictions.bias",
        "cls/predictions/transform/dense/kernel": "cls.predictions.transform.dense.weight",
        "cls/seq_relationship/output_weights": "cls.seq_relationship.weight",
        "cls/seq_relationship/output_bias": "cls.seq_relationship.bias",
    }
    for tf, hf in examples.items():
        assert tf in by_tf and hf_name(tf) == hf


def test_hf_names_are_exactly_the_transformers_parameters():
    transformers = pytest.importorskip("transformers", reason="transformers is in the test extra")
    config = named_config("large")
    with torch.device("meta"):
        peer = transformers.BertForPreTraining(transformers.BertConfig(**config.transformers_kwargs()))
    assert sorted(hf_to_torch(config)) == sorted(n for n, _ in peer.named_parameters())
    tied = set(peer.state_dict()) - {n for n, _ in peer.named_parameters()}
    assert tied == set(HF_TIED)


def test_hf_state_dict_drops_and_restores_the_vocabulary_padding(tmp_path):
    config = named_config("micro", vocab_size=4093)
    torch.manual_seed(0)
    state = BertForPreTraining(config).state_dict()
    hf = to_hf_state_dict(state, config)
    assert hf["bert.embeddings.word_embeddings.weight"].shape == (4093, 64)
    assert hf["cls.predictions.decoder.weight"] is hf["bert.embeddings.word_embeddings.weight"]
    assert hf["cls.predictions.decoder.bias"] is hf["cls.predictions.bias"]
    fit = map_to_model(Source(tmp_path / "hf.bin", "pytorch", hf), config, model_shapes(config))  # what loads it
    assert fit.naming == "huggingface" and fit.fits and sorted(fit.ignored) == sorted(HF_TIED)
    back = fit.state
    assert back.keys() == state.keys()
    word = back["bert.embeddings.word_embeddings.weight"]
    assert word.shape == (4096, 64) and torch.equal(word[:4093], state["bert.embeddings.word_embeddings.weight"][:4093])
    assert word[4093:].abs().sum() == 0
    assert all(torch.equal(back[k], state[k]) for k in state if "word_embeddings" not in k and k != "mlm.bias")
