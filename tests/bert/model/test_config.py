"""The model configuration (bert.model.config): the named sizes, their overrides and the checks of each field."""

import pytest

from bert.model.config import BertConfig, ModelSpec, named_config
from bert.typed_config import ConfigError


def test_large_is_bert_large_and_overrides_change_only_their_field():
    large = named_config("large")
    assert (large.hidden_size, large.num_layers, large.num_heads, large.head_size) == (1024, 24, 16, 64)
    assert large.padded_vocab_size == 30528 and large.padded_vocab_size % 8 == 0  # 30522 rounded up to 8
    erf = named_config("large", gelu="erf")
    assert erf.gelu == "erf" and erf.replace(gelu="tanh") == large
    assert named_config("micro").transformers_kwargs()["hidden_act"] == "gelu_new"  # tanh GELU in transformers


@pytest.mark.parametrize("make, error, message", [
    (lambda: named_config("huge"), ValueError, r"unknown model config 'huge'; choose one of base, large, micro"),
    (lambda: named_config("tiny", hidden=3), ValueError, r"unknown model config field\(s\) hidden; valid: "),
    (lambda: BertConfig(hidden_size=100, num_heads=16), ConfigError,
     r"model config: hidden_size: 100 is not divisible by num_heads 16"),
    (lambda: BertConfig(hidden_dropout=1.0), ConfigError, r"model config: hidden_dropout: "),
])
def test_a_bad_name_field_or_shape_is_refused_naming_it(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_a_run_blocks_model_problems_name_the_override_or_the_model():
    assert ModelSpec(model="tiny", model_overrides={"gelu": "erf"}).problems() == []
    assert [f for f, _ in ModelSpec(model="tiny", model_overrides={"num_layers": 0}).problems()] == [
        "model_overrides.num_layers"]
    assert [f for f, _ in ModelSpec(model="giant").problems()] == ["model"]
