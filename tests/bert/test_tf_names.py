import torch

from bert.config import named_config
from bert.model import BertForPreTraining
from bert.tf_names import tensor_names, tf_to_torch, torch_to_tf


def _meta_model(name: str) -> BertForPreTraining:
    with torch.device("meta"):
        return BertForPreTraining(named_config(name))


def test_large_table_names_every_parameter_once():
    config = named_config("large")
    params = dict(_meta_model("large").named_parameters())
    table = tensor_names(config)
    assert sorted(e.torch for e in table) == sorted(params)
    assert len({e.tf for e in table}) == len(table) == 398
    assert len({e.torch for e in table}) == len(table)


def test_large_table_shapes_follow_the_reference():
    config = named_config("large")
    params = dict(_meta_model("large").named_parameters())
    by_tf = tf_to_torch(config)
    kernel = by_tf["bert/encoder/layer_23/attention/self/query/kernel"]
    assert kernel.transpose and params[kernel.torch].shape == (1024, 1024)
    ffn = by_tf["bert/encoder/layer_0/intermediate/dense/kernel"]
    # TF stores [in, out] = [1024, 4096]; torch Linear holds [out, in].
    assert params[ffn.torch].shape == (4096, 1024) and ffn.transpose
    nsp = by_tf["cls/seq_relationship/output_weights"]
    assert params[nsp.torch].shape == (2, 1024) and not nsp.transpose
    word = by_tf["bert/embeddings/word_embeddings"]
    assert word.vocab_padded and params[word.torch].shape == (30528, 1024)
    assert by_tf["cls/predictions/output_bias"].vocab_padded
    assert by_tf["bert/encoder/layer_5/output/LayerNorm/gamma"].torch == "bert.encoder.5.layer_norm.weight"


def test_lookup_tables_are_inverse():
    config = named_config("tiny")
    forward, backward = torch_to_tf(config), tf_to_torch(config)
    assert all(backward[e.tf].torch == name for name, e in forward.items())
