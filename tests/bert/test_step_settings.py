"""The step's settings (bert.step_settings): the run block's precision, compile and step fields load, a bad value is
refused naming its field, and the rules across fields of each part (the step's, the compile settings') all run."""

import pytest

from bert.step_settings import StepSpec
from bert.typed_config import ConfigError, from_dict, rule_problems


def test_a_block_loads_with_its_defaults():
    step = from_dict(StepSpec, {"precision": "bf16", "compile": "required", "token_sizes": 16,
                                "gradient_accumulation_steps": 2}, "sys.json", "run")
    assert (step.precision, step.compile, step.token_sizes, step.gradient_accumulation_steps) == ("bf16", "required",
                                                                                                  16, 2)
    assert (step.unpadded, step.cuda_graphs, step.initial_loss_scale) == (True, False, 1024.0)


@pytest.mark.parametrize("block, message", [
    ({"precision": "fp64"}, "run.precision: expected one of 'fp32', 'bf16', 'fp16', 'fp8', got 'fp64' (string)"),
    ({"initial_loss_scale": 0}, "run.initial_loss_scale: must be positive, got 0.0"),
    ({"token_sizes": 65}, "run.token_sizes: must be 0 or more and at most 64, got 65"),
    ({"gradient_accumulation_steps": 0}, "run.gradient_accumulation_steps: must be at least 1, got 0"),
    ({"token_sizes": 4, "unpadded": False}, "run.token_sizes: rounds the unpadded layout's token count"),
])
def test_a_bad_value_is_refused_naming_the_field(block, message):
    with pytest.raises(ConfigError) as info:
        from_dict(StepSpec, block, "sys.json", "run")
    assert str(info.value).startswith(f"sys.json: {message}")


def test_the_rules_of_every_part_run():
    # A settings type composed of others runs each one's rules: the step's and the compile settings'.
    step = StepSpec(token_sizes=4, unpadded=False, cuda_graphs=True)
    assert [field for field, _ in rule_problems(step)] == ["token_sizes", "cuda_graphs"]
