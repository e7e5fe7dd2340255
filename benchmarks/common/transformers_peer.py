"""transformers' BertForPreTraining as the peer of this model, for side-by-side comparisons
(benchmarks/throughput.py, the fast path's equivalence test): the same config (BertConfig.transformers_kwargs),
the same weights (bert.model.tf_names.to_hf_state_dict), the same optimizer groups and the same samples, in the
form transformers takes them."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from bert.data.batch import Batch
from bert.model.config import BertConfig
from bert.model.pretraining import BertForPreTraining
from bert.model.tf_names import hf_to_torch, to_hf_state_dict
from bert.optim.factory import excluded_from_weight_decay


def peer_model(ours: BertForPreTraining, config: BertConfig) -> torch.nn.Module:
    """transformers' BertForPreTraining with `ours`' weights, attention through SDPA (transformers is the test
    and bench extras' dependency, imported here only)."""
    import transformers

    peer = transformers.BertForPreTraining(
        transformers.BertConfig(**config.transformers_kwargs(), attn_implementation="sdpa"))
    peer.load_state_dict(to_hf_state_dict(ours.state_dict(), config))
    return peer


def hf_parameter_groups(hf_model: torch.nn.Module, config: BertConfig, weight_decay: float) -> list[dict]:
    """The reference groups (no decay or trust ratio for LayerNorm and biases), found through our names."""
    ours = hf_to_torch(config)
    decay, no_decay = [], []
    for name, p in hf_model.named_parameters():
        (no_decay if excluded_from_weight_decay(ours[name]) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay, "layer_adaptation": True},
            {"params": no_decay, "weight_decay": 0.0, "layer_adaptation": False}]


@dataclass
class HFBatch:
    """A batch in transformers' form, shaped to go through TrainStep like ours."""

    inputs: dict[str, torch.Tensor]
    num_tokens: int

    def model_inputs(self, unpadded: bool) -> dict[str, torch.Tensor]:
        return self.inputs

    def loss(self, out) -> torch.Tensor:
        """The step's loss (bert.data.batch.Batch.loss): transformers' own, unweighted."""
        return out.loss

    def to(self, device: torch.device) -> HFBatch:
        return HFBatch({k: v.to(device) for k, v in self.inputs.items()}, self.num_tokens)


def to_hf_batch(batch: Batch) -> HFBatch:
    """The same samples as transformers takes them: a key mask and MLM labels of -100 where nothing is masked."""
    b, length = batch.input_ids.shape
    lengths = (batch.layout.cu_seqlens[1:] - batch.layout.cu_seqlens[:-1]).long()
    labels = torch.full((b * length,), -100, dtype=torch.long)
    labels[batch.mlm_index_padded] = batch.mlm_labels
    inputs = {
        "input_ids": batch.input_ids, "token_type_ids": batch.segment_ids,
        "attention_mask": (torch.arange(length)[None, :] < lengths[:, None]).long(),
        "labels": labels.view(b, length), "next_sentence_label": batch.nsp_labels,
    }
    return HFBatch(inputs, batch.num_tokens)
