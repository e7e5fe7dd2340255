"""The search's settings (bert.search_settings): a run.search parameter loads as a range or as choices, and a bad
value is refused naming its field (the checks against the run fields it names: tests/bert/test_search_space.py)."""

import pytest

from bert.search_settings import SearchParam
from bert.typed_config import ConfigError, from_dict


def test_a_range_and_a_choice_load():
    lr = from_dict(SearchParam, {"low": 1e-4, "high": 1e-2, "log": True}, "sys.json", "run.search.lr")
    assert (lr.low, lr.high, lr.log, lr.step, lr.choices) == (1e-4, 1e-2, True, None, None)
    clip = from_dict(SearchParam, {"choices": ["after_allreduce", "before_allreduce"]}, "sys.json", "run.search.clip")
    assert clip.choices == ["after_allreduce", "before_allreduce"] and clip.low is None


@pytest.mark.parametrize("param, message", [
    ({"low": 1, "high": 8, "step": 0}, "run.search.x.step: must be positive, got 0.0"),
    ({"low": "1e-4"}, "run.search.x.low: expected a number, got '1e-4' (string); write the number without quotes"),
    ({"choices": [{"a": 1}]}, "run.search.x.choices[0]: expected a string or an integer or a number, got object"),
    ({"lo": 1}, "run.search.x.lo: unknown field; did you mean 'low'?"),
])
def test_a_bad_value_is_refused_naming_the_field(param, message):
    with pytest.raises(ConfigError) as info:
        from_dict(SearchParam, param, "sys.json", "run.search.x")
    assert str(info.value) == f"sys.json: {message}"
