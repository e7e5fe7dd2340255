"""The one table between this model's parameter names and the reference TensorFlow variable names.

Used for `weights_initialization` log lines, for checkpoint conversion and by LAMB (one trust ratio per reference
tensor). TF dense kernels are [in, out] while torch Linear weights are [out, in]: entries with `transpose=True`
need a transpose either way. Tensors over the vocabulary (`vocab_padded=True`) carry extra rows in torch (see
BertConfig.pad_vocab_to_multiple). The attention's query, key and value are one torch parameter (and one bias),
the three stacked along the first dimension: each is an entry of its own, a `part` of that parameter.
Hugging Face transformers' names are derived from the TF names (`hf_name`), not listed a second time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch

from bert.model.config import BertConfig


@dataclass(frozen=True)
class TensorName:
    torch: str
    tf: str
    transpose: bool = False
    vocab_padded: bool = False
    part: int = 0  # this tensor is rows part/parts .. (part+1)/parts of the torch parameter
    parts: int = 1

    def of(self, tensor: torch.Tensor) -> torch.Tensor:
        """This entry's part of the torch parameter `tensor` (a view; the whole tensor when it has one part)."""
        return tensor if self.parts == 1 else tensor.chunk(self.parts)[self.part]

    @property
    def unfused(self) -> str:
        """This model's name for the tensor before query, key and value became one parameter (checkpoints
        written by earlier versions)."""
        return self.torch.replace(".qkv.", (".query.", ".key.", ".value.")[self.part]) if self.parts > 1 else self.torch


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
    qkv = [TensorName(entry.torch, entry.tf, entry.transpose, part=part, parts=3)
           for part, name in enumerate(("query", "key", "value"))
           for entry in _dense(f"{t}.attention.qkv", f"{f}/attention/self/{name}")]
    return [
        *qkv,
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


# Hugging Face transformers' BertForPreTraining follows the TF names with a few mechanical changes: '/' becomes
# '.', layer_<i> becomes layer.<i>, and the TF variable suffixes become torch's weight/bias.
_HF_SUFFIXES = {"kernel": "weight", "gamma": "weight", "beta": "bias", "output_weights": "weight",
                "output_bias": "bias", "bias": "bias"}
# transformers also lists the tied MLM decoder in its state dict: its weight is the word embedding matrix and
# its bias the MLM output bias. Keys are the decoder's names, values the TF names of the tensors they alias.
HF_TIED = {"cls.predictions.decoder.weight": "bert/embeddings/word_embeddings",
           "cls.predictions.decoder.bias": "cls/predictions/output_bias"}


def hf_name(tf: str) -> str:
    """The transformers BertForPreTraining parameter name of a reference TF variable."""
    parts = [part.replace("layer_", "layer.") if part.startswith("layer_") else part for part in tf.split("/")]
    suffix = _HF_SUFFIXES.get(parts[-1])
    # Embedding tables are TF variables of their own; in torch they are the `weight` of an Embedding.
    return ".".join(parts[:-1] + [suffix]) if suffix else ".".join(parts + ["weight"])


def hf_to_torch(config: BertConfig) -> dict[str, str]:
    """transformers' parameter name -> this model's parameter holding that tensor (or a part of it; same
    [out, in] layout: no transposes)."""
    return {hf_name(entry.tf): entry.torch for entry in tensor_names(config)}


def fused_parts(config: BertConfig) -> dict[str, int]:
    """The parameters that hold several reference tensors (query, key and value), by name: how many, stacked
    along the first dimension."""
    return {entry.torch: entry.parts for entry in tensor_names(config) if entry.parts > 1}


def to_hf_state_dict(state: Mapping[str, torch.Tensor], config: BertConfig) -> dict[str, torch.Tensor]:
    """This model's state dict as transformers' BertForPreTraining state dict, tied decoder included.

    Vocabulary tensors lose the padding rows (transformers' model has exactly vocab_size rows).
    """
    out = {}
    for entry in tensor_names(config):
        tensor = entry.of(state[entry.torch])
        out[hf_name(entry.tf)] = tensor[: config.vocab_size] if entry.vocab_padded else tensor
    for tied, tf in HF_TIED.items():
        out[tied] = out[hf_name(tf)]
    return out

