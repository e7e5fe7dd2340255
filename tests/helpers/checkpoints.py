"""Checkpoints as others publish them, made from this model's state."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import torch

from bert.model.config import BertConfig
from bert.model.tf_names import to_hf_state_dict


def hf_checkpoint_state(state: dict[str, torch.Tensor], config: BertConfig) -> dict[str, torch.Tensor]:
    """`state` (this model's state dict) under Hugging Face's names, with the position_ids buffer that
    Hugging Face's checkpoints carry beside the parameters."""
    hf = {k: v.clone() for k, v in to_hf_state_dict(state, config).items()}
    hf["bert.embeddings.position_ids"] = torch.arange(config.max_position_embeddings)[None]
    return hf


def write_safetensors(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    """The format as published: u64 little-endian header length, JSON header, raw little-endian data."""
    codes = {torch.float32: "F32", torch.bfloat16: "BF16", torch.int64: "I64"}
    header, chunks, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        raw = t.contiguous().view(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": codes[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + b"".join(chunks))
