"""The BERT model configuration: one dataclass and the named sizes.

BERT-large is the MLPerf reference model. The smaller sizes exist so that the whole harness can be developed
and tested on a laptop CPU; they share every code path with the large model.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from bert.typed_config import ConfigError, check_fields, ranged

# The two GELUs of BERT implementations: "tanh", 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))), the MLPerf
# reference's (TensorFlow modeling.py `gelu`, in the encoder and the masked-LM transform); "erf", the exact
# x * Phi(x), NVIDIA's PyTorch implementations' (their accepted MLPerf submissions) and transformers' "gelu".
# They differ by up to about 5e-4 per activation.
Gelu = Literal["tanh", "erf"]


@dataclass(frozen=True)
class BertConfig:
    """The model's shape; every field is checked where it is declared (bert.typed_config), so a named config
    with bad overrides fails with the field's name."""

    vocab_size: int = ranged(1, default=30522)
    hidden_size: int = ranged(1, default=1024)
    num_layers: int = ranged(1, default=24)
    num_heads: int = ranged(1, default=16)
    intermediate_size: int = ranged(1, default=4096)
    max_position_embeddings: int = ranged(1, default=512)
    type_vocab_size: int = ranged(1, default=2)
    layer_norm_eps: float = ranged(0, low_open=True, default=1e-12)
    initializer_range: float = ranged(0, low_open=True, default=0.02)
    hidden_dropout: float = ranged(0, 1, high_open=True, default=0.1)
    attention_dropout: float = ranged(0, 1, high_open=True, default=0.1)
    # Tensor cores want the embedding/decoder matrix rows in multiples of 8; the extra rows are never targets.
    pad_vocab_to_multiple: int = ranged(1, default=8)
    gelu: Gelu = "tanh"  # see Gelu; every path (eager, compiled, fused) computes this one

    def __post_init__(self) -> None:
        check_fields(self, "model config")
        if self.hidden_size % self.num_heads:
            raise ConfigError("model config", "hidden_size", f"{self.hidden_size} is not divisible by num_heads "
                              f"{self.num_heads}")

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def padded_vocab_size(self) -> int:
        m = self.pad_vocab_to_multiple
        return (self.vocab_size + m - 1) // m * m

    def replace(self, **changes: Any) -> BertConfig:
        return dataclasses.replace(self, **changes)

    def transformers_kwargs(self) -> dict[str, Any]:
        """Arguments of transformers.BertConfig for the same model (whose vocabulary has no padding rows)."""
        return {
            "vocab_size": self.vocab_size, "hidden_size": self.hidden_size, "num_hidden_layers": self.num_layers,
            "num_attention_heads": self.num_heads, "intermediate_size": self.intermediate_size,
            "hidden_act": {"tanh": "gelu_new", "erf": "gelu"}[self.gelu], "hidden_dropout_prob": self.hidden_dropout,
            "attention_probs_dropout_prob": self.attention_dropout,
            "max_position_embeddings": self.max_position_embeddings, "type_vocab_size": self.type_vocab_size,
            "initializer_range": self.initializer_range, "layer_norm_eps": self.layer_norm_eps,
        }


NAMED_CONFIGS: dict[str, BertConfig] = {
    "large": BertConfig(),
    "base": BertConfig(hidden_size=768, num_layers=12, num_heads=12, intermediate_size=3072),
    # Development sizes: the synthetic corpus has a 4096-piece vocabulary and needs no dropout to generalise.
    # tiny's 8 heads of 16 cost the same FLOPs as 2 of 64 but learn the grammar's agreements sooner, so cpu_tiny
    # reaches its target in fewer samples.
    "tiny": BertConfig(
        vocab_size=4096, hidden_size=128, num_layers=2, num_heads=8, intermediate_size=512,
        max_position_embeddings=512, hidden_dropout=0.0, attention_dropout=0.0,
    ),
    "micro": BertConfig(
        vocab_size=4096, hidden_size=64, num_layers=1, num_heads=2, intermediate_size=128,
        max_position_embeddings=512, hidden_dropout=0.0, attention_dropout=0.0,
    ),
}


def named_config(name: str, **overrides: Any) -> BertConfig:
    """The named configuration with `overrides` applied; raises ValueError naming the valid choices."""
    if name not in NAMED_CONFIGS:
        raise ValueError(f"unknown model config {name!r}; choose one of {', '.join(sorted(NAMED_CONFIGS))}")
    valid = {f.name for f in dataclasses.fields(BertConfig)}
    unknown = sorted(set(overrides) - valid)
    if unknown:
        raise ValueError(f"unknown model config field(s) {', '.join(unknown)}; valid: {', '.join(sorted(valid))}")
    return NAMED_CONFIGS[name].replace(**overrides)


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """The model of a run (fields of the run block)."""

    model: str = "large"
    """A named config: "large" (BERT-large, the MLPerf reference model), "base", or the development sizes "tiny"
    and "micro"."""
    model_overrides: dict[str, int | float | str] = field(default_factory=dict)
    """Fields of the named config to change, e.g. {"gelu": "erf"} (the reference's GELU is "tanh")."""

    def model_config(self) -> BertConfig:
        return named_config(self.model, **self.model_overrides)

    def problems(self) -> list[tuple[str, str]]:
        try:
            self.model_config()
        except ConfigError as e:  # a model config field, which only an override can set wrong
            return [(f"model_overrides.{e.field}", e.problem)]
        except ValueError as e:
            return [("model_overrides" if self.model in NAMED_CONFIGS and self.model_overrides else "model", str(e))]
        return []
