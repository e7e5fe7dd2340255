"""The eval's settings (bert.eval_settings): a run.eval block loads with MLPerf's defaults, its interval is the
MLPerf formula unless given, and a bad value is refused naming its field."""

import pytest

from bert.eval_settings import EvalSpec
from bert.mlperf_rules import EVAL_SAMPLES, MLPERF_TARGET_ACCURACY
from bert.typed_config import ConfigError, from_dict


def test_a_block_loads_with_the_mlperf_defaults_and_its_interval():
    spec = from_dict(EvalSpec, {"batch_size": 64}, "sys.json", "run.eval")
    assert (spec.target_accuracy, spec.samples, spec.batch_size) == (MLPERF_TARGET_ACCURACY, EVAL_SAMPLES, 64)
    assert spec.interval(448) == 150_000  # the MLPerf formula
    assert from_dict(EvalSpec, {"interval_samples": 512}, "sys.json", "run.eval").interval(448) == 512


@pytest.mark.parametrize("block, message", [
    ({"target_accuracy": 1.0}, "run.eval.target_accuracy: must be positive and less than 1, got 1.0"),
    ({"samples": 0}, "run.eval.samples: must be at least 1, got 0"),
    ({"interval_samples": 0}, "run.eval.interval_samples: must be at least 1, got 0 (or null for the MLPerf formula)"),
    ({"batch": 8}, "run.eval.batch: unknown field; did you mean 'batch_size'?"),
])
def test_a_bad_value_is_refused_naming_the_field(block, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        from_dict(EvalSpec, block, "sys.json", "run.eval")
