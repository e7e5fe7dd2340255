"""The one table between this model's parameter names and the reference TensorFlow variable names.

Used for `weights_initialization` log lines and for checkpoint conversion. TF dense kernels are [in, out]
while torch Linear weights are [out, in]: entries with `transpose=True` need a transpose either way.
Tensors over the vocabulary (`vocab_padded=True`) carry extra rows in torch (see BertConfig.pad_vocab_to_multiple).
"""

from __future__ import annotations

from dataclasses import dataclass

from bert.config import BertConfig


@dataclass(frozen=True)
class TensorName:
    torch: str
    tf: str
    transpose: bool = False
    vocab_padded: bool = False


def _dense(torch_prefix: str, tf_prefix: str) -> list[TensorName]:
    return [
        TensorName(f"{torch_prefix}.weight", f"{tf_prefix}/kernel", transpose=True),
        TensorName(f"{torch_prefix}.bias", f"{tf_prefix}/bias"),
    ]


def _layer_norm(torch_prefix: str, tf_prefix: str) -> list[TensorName]:
    return [
        TensorName(f"{torch_prefix}.weight", f"{tf_prefix}/gamma"),
        TensorName(f"{torch_prefix}.bias", f"{tf_prefix}/beta"),
    ]


def _encoder_layer(i: int) -> list[TensorName]:
    t, f = f"bert.encoder.{i}", f"bert/encoder/layer_{i}"
    return [
        *_dense(f"{t}.attention.query", f"{f}/attention/self/query"),
        *_dense(f"{t}.attention.key", f"{f}/attention/self/key"),
        *_dense(f"{t}.attention.value", f"{f}/attention/self/value"),
        *_dense(f"{t}.attention.output", f"{f}/attention/output/dense"),
        *_layer_norm(f"{t}.attention.layer_norm", f"{f}/attention/output/LayerNorm"),
        *_dense(f"{t}.intermediate", f"{f}/intermediate/dense"),
        *_dense(f"{t}.output", f"{f}/output/dense"),
        *_layer_norm(f"{t}.layer_norm", f"{f}/output/LayerNorm"),
    ]


def tensor_names(config: BertConfig) -> list[TensorName]:
    """Every trainable tensor of BertForPreTraining(config), in the reference's order."""
    table = [
        TensorName("bert.embeddings.word_embeddings.weight", "bert/embeddings/word_embeddings",
                   vocab_padded=True),
        TensorName("bert.embeddings.token_type_embeddings.weight", "bert/embeddings/token_type_embeddings"),
        TensorName("bert.embeddings.position_embeddings.weight", "bert/embeddings/position_embeddings"),
        *_layer_norm("bert.embeddings.layer_norm", "bert/embeddings/LayerNorm"),
    ]
    for i in range(config.num_layers):
        table += _encoder_layer(i)
    table += [
        *_dense("bert.pooler", "bert/pooler/dense"),
        *_dense("mlm.transform", "cls/predictions/transform/dense"),
        *_layer_norm("mlm.layer_norm", "cls/predictions/transform/LayerNorm"),
        TensorName("mlm.bias", "cls/predictions/output_bias", vocab_padded=True),
        # TF keeps this one as [2, hidden] and multiplies with transpose_b, the torch layout already.
        TensorName("nsp.weight", "cls/seq_relationship/output_weights"),
        TensorName("nsp.bias", "cls/seq_relationship/output_bias"),
    ]
    return table


def torch_to_tf(config: BertConfig) -> dict[str, TensorName]:
    return {entry.torch: entry for entry in tensor_names(config)}


def tf_to_torch(config: BertConfig) -> dict[str, TensorName]:
    return {entry.tf: entry for entry in tensor_names(config)}
