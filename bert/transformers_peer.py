"""transformers' BertForPreTraining as the peer of this model, for side-by-side comparisons
(benchmarks/throughput.py, the fast path's equivalence test): the same config (BertConfig.transformers_kwargs),
the same weights (bert.model.tf_names.to_hf_state_dict) and the same samples, in the form transformers takes them."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from bert.data.batch import Batch
from bert.model.config import BertConfig
from bert.model.pretraining import BertForPreTraining
from bert.model.tf_names import to_hf_state_dict


def peer_model(ours: BertForPreTraining, config: BertConfig) -> torch.nn.Module:
    """transformers' BertForPreTraining with `ours`' weights, attention through SDPA (transformers is the test
    and bench extras' dependency, imported here only)."""
    import transformers

    peer = transformers.BertForPreTraining(
        transformers.BertConfig(**config.transformers_kwargs(), attn_implementation="sdpa"))
    peer.load_state_dict(to_hf_state_dict(ours.state_dict(), config))
    return peer


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
