"""The sizes of the GPU machine's checks (acceptance/gpu_check.py) on a GPU and in the CPU rehearsal, and the model
they run: h200_1x1's choices at the check's size."""

from __future__ import annotations

import dataclasses

from bert.model.config import BertConfig, named_config
from bert.system import load_descriptor


@dataclasses.dataclass(frozen=True)
class Sizes:
    sequences: int  # per micro-batch
    length: int
    run: dict  # the short run's changes to systems/h200_1x1.json besides its length and updates
    corpus: dict  # its synthetic corpus
    model: str = "large"


SIZES = {
    "cuda": Sizes(56, 512, {}, {"train_samples": 8192, "eval_samples": 1000, "shards": 8}),
    "cpu": Sizes(4, 64, {"model": "micro", "device": "cpu", "global_batch_size": 8,
                             "gradient_accumulation_steps": 2, "max_predictions_per_seq": 10,
                             "print_interval_steps": 10},
                 {"train_samples": 512, "eval_samples": 64, "shards": 2, "max_predictions": 10}, model="micro"),
}


BERT_DROPOUT = {"hidden_dropout": 0.1, "attention_dropout": 0.1}  # BERT-large's, for the rehearsal's micro model


def descriptor_config(model: str, **overrides: object) -> BertConfig:
    """The named model with h200_1x1's choices (its GELU), as the checked runs compute it."""
    return named_config(model, gelu=load_descriptor("h200_1x1").model_config().gelu, **overrides)
