"""The search space of a descriptor (run.search), checked before a study starts and by `system check`."""

import pytest
from click.testing import CliRunner

from bert.cli import main
from bert.search_space import check_search_space
from bert.system import load_descriptor
from bert.typed_config import ConfigError


def test_search_space_is_validated():
    def search_error(search: dict, run: dict | None = None, description: dict | None = None) -> str:
        system = load_descriptor("cpu_micro").variant({**(run or {}), "search": search}, description=description)
        with pytest.raises(ConfigError) as info:
            check_search_space(system)
        return str(info.value)

    assert "run.search.max_samples: not a searchable run field" in search_error({"max_samples": {"low": 1, "high": 2}})
    assert "run.search.optimizer.beta_3: not a searchable run field" in \
        search_error({"optimizer.beta_3": {"low": 0.1, "high": 0.2}})
    assert "run.search.optimizer.name: has a fixed set of values; search it with \"choices\"" in \
        search_error({"optimizer.name": {"low": 0, "high": 1}})
    assert "run.search.optimizer.base_learning_rate: a log range needs low > 0" in \
        search_error({"optimizer.base_learning_rate": {"low": 0, "high": 1, "log": True}})
    assert "run.search.optimizer.warmup_steps: run.optimizer.warmup_steps is an integer field" in \
        search_error({"optimizer.warmup_steps": {"low": 0, "high": 10.5}})
    assert "run.search.global_batch_size: the value 25 makes the descriptor invalid: run.global_batch_size: 25 is " \
        "not divisible" in search_error({"global_batch_size": {"choices": [32, 25]}}, run={"processes_per_node": 2})
    message = search_error({"optimizer.warmup_steps": {"low": -5, "high": 10}})
    assert "run.search.optimizer.warmup_steps: the value -5 makes the descriptor invalid: " \
           "run.optimizer.warmup_steps: must be 0 or more" in message
    assert "run.search.optimizer.name: the value 'adam' makes the descriptor invalid: run.optimizer.name" in \
        search_error({"optimizer.name": {"choices": ["lamb", "adam"]}}, description={"division": "closed"})
    ok = load_descriptor("cpu_micro").variant({"search": {
        "optimizer.name": {"choices": ["lamb", "adam"]},
        "optimizer.base_learning_rate": {"low": 1e-4, "high": 1e-2, "log": True},
        "optimizer.warmup_steps": {"low": 0, "high": 100, "step": 10},
        "global_batch_size": {"choices": [16, 32]}}}, name="ok")
    check_search_space(ok)
    assert ok.run.search["optimizer.warmup_steps"].step == 10.0


def test_system_check_and_hpo_refuse_a_bad_search_space(tmp_path):
    from bert.hpo import StudyRequest, run_study

    bad = load_descriptor("cpu_micro").variant({"search": {"max_samples": {"low": 1, "high": 2}}}, name="bad")
    result = CliRunner().invoke(main, ["system", "check", str(bad.write(tmp_path).path)])
    assert result.exit_code == 1 and "run.search.max_samples: not a searchable run field" in result.output
    with pytest.raises(ConfigError, match="run.search.max_samples: not a searchable run field"):
        run_study(StudyRequest(bad, f"sqlite:///{tmp_path / 'study.db'}", "bad"), trials=1)
