"""The search space of a descriptor (run.search), checked before a study starts and by `system check`."""

import pytest
from click.testing import CliRunner

from bert.cli import main
from bert.search_space import check_search_space
from bert.system import load_system
from bert.typed_config import ConfigError
from tests.conftest import descriptor, write_descriptor


def test_search_space_is_validated(tmp_path):
    def search_error(search: dict) -> str:
        return _error(tmp_path, descriptor(search=search))

    def _error(folder, data) -> str:
        with pytest.raises(ConfigError) as info:
            check_search_space(load_system(write_descriptor(folder, "bad", data)))
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
    two = descriptor(processes_per_node=2, search={"global_batch_size": {"choices": [32, 25]}})
    assert "run.search.global_batch_size: the value 25 makes the descriptor invalid: run.global_batch_size: 25 is " \
        "not divisible" in _error(tmp_path, two)
    message = search_error({"optimizer.warmup_steps": {"low": -5, "high": 10}})
    assert "run.search.optimizer.warmup_steps: the value -5 makes the descriptor invalid: " \
           "run.optimizer.warmup_steps: must be 0 or more" in message
    closed = descriptor(search={"optimizer.name": {"choices": ["lamb", "adam"]}})
    closed["system"]["division"] = "closed"
    assert "run.search.optimizer.name: the value 'adam' makes the descriptor invalid: run.optimizer.name" in \
        _error(tmp_path, closed)
    ok = load_system(write_descriptor(tmp_path, "ok", descriptor(search={
        "optimizer.name": {"choices": ["lamb", "adam"]},
        "optimizer.base_learning_rate": {"low": 1e-4, "high": 1e-2, "log": True},
        "optimizer.warmup_steps": {"low": 0, "high": 100, "step": 10},
        "global_batch_size": {"choices": [16, 32]}})))
    assert ok.run.search["optimizer.warmup_steps"].step == 10.0


def test_system_check_and_hpo_refuse_a_bad_search_space(tmp_path):
    from bert.hpo import StudyRequest, run_study

    bad = write_descriptor(tmp_path, "bad", descriptor(search={"max_samples": {"low": 1, "high": 2}}))
    result = CliRunner().invoke(main, ["system", "check", str(bad)])
    assert result.exit_code == 1 and "run.search.max_samples: not a searchable run field" in result.output
    with pytest.raises(ConfigError, match="run.search.max_samples: not a searchable run field"):
        run_study(StudyRequest(load_system(bad), f"sqlite:///{tmp_path / 'study.db'}", "bad"), trials=1)
