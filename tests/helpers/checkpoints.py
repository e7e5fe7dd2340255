"""Checkpoints as others publish them, made from this model's state."""

from __future__ import annotations

import torch

from bert.model.config import BertConfig
from bert.model.tf_names import to_hf_state_dict


def hf_checkpoint_state(state: dict[str, torch.Tensor], config: BertConfig) -> dict[str, torch.Tensor]:
    """`state` (this model's state dict) under Hugging Face's names, with the position_ids buffer that
    Hugging Face's checkpoints carry beside the parameters."""
    hf = {k: v.clone() for k, v in to_hf_state_dict(state, config).items()}
    hf["bert.embeddings.position_ids"] = torch.arange(config.max_position_embeddings)[None]
    return hf
