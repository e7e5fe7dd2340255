"""The optimizer's settings (bert.optim.settings): a run.optimizer block as a descriptor gives it."""

import pytest

from bert.optim.settings import OptimizerSpec
from bert.typed_config import ConfigError, from_dict

BLOCK = {"name": "lamb", "base_learning_rate": 0.002, "warmup_steps": 0, "start_warmup_step": -76,
         "training_steps": 1000, "implementation": "compiled"}


def test_a_good_block_loads_with_the_references_defaults():
    spec = from_dict(OptimizerSpec, BLOCK, "system.json", "run.optimizer")
    assert spec.start_warmup_step == -76 and spec.implementation == "compiled"
    assert (spec.beta_1, spec.beta_2, spec.epsilon, spec.weight_decay_rate, spec.poly_power) == (
        0.9, 0.999, 1e-6, 0.01, 1.0)


@pytest.mark.parametrize("changes, message", [
    ({"base_learning_rate": 0}, r"run.optimizer.base_learning_rate: must be positive"),
    ({"start_warmup_step": 5}, r"run.optimizer.start_warmup_step: .*a positive start gives the reference a "
                               r"negative learning rate"),
    ({"beta_2": 1.0}, r"run.optimizer.beta_2: must be 0 or more and less than 1"),
    ({"name": "adam"}, r"run.optimizer.implementation: AdamW does not run \"compiled\": it runs \"eager\" \(torch's "
                       r"fused kernel on CUDA, foreach kernels on a CPU\); use one of those"),
    ({"training_steps": None}, r"run.optimizer.training_steps: "),
])
def test_a_bad_value_is_refused_naming_the_field(changes, message):
    with pytest.raises(ConfigError, match=message):
        from_dict(OptimizerSpec, {**BLOCK, **changes}, "system.json", "run.optimizer")
