"""The official tools' wrappers: rulesets, the reference convergence points, verdicts read from the output."""

import json
from pathlib import Path

import mlperf_logging
import pytest

from compliance.checkers import (
    CheckResult,
    RulesetError,
    rcp_batch_sizes,
    rcp_reference,
    require_ruleset,
    system_desc_check,
)
from tests.compliance.fakes import write_package, write_run
from tests.helpers.compliance import cli


def test_supported_and_refused_rulesets():
    assert require_ruleset("5.0.0") == "5.0.0" and require_ruleset("4.1.0") == "4.1.0"
    with pytest.raises(RulesetError, match="BERT was retired after MLPerf Training v5.0"):
        require_ruleset("5.1.0")
    with pytest.raises(RulesetError, match="not supported"):
        require_ruleset("latest")


def test_reference_points_are_chosen_as_the_rcp_checker_chooses():
    assert rcp_batch_sizes("5.0.0") == [448, 4608, 6144, 6912, 12288, 13056, 16384]
    exact = rcp_reference(448)
    assert exact.source == "reference" and exact.mean_samples == pytest.approx(2_414_421, abs=1)
    assert exact.min_mean_samples < exact.mean_samples
    between = rcp_reference(1000)
    assert between.source == "interpolated" and 2_414_421 < between.mean_samples < 2_798_080
    below = rcp_reference(32)
    assert below.source == "smallest reference" and below.batch_size == 448
    assert rcp_reference(32768) is None


def test_system_description_verdict_is_read_from_the_output_not_the_exit_code(tmp_path):
    org = write_package(tmp_path / "Org")
    assert system_desc_check(org / "systems" / "cpu_micro.json").passed
    path = org / "systems" / "cpu_micro.json"
    path.write_text(path.read_text().replace('"cooling"', '"coolant"'))
    failed = system_desc_check(path)
    assert not failed.passed and any("Missing field cooling" in line for line in failed.problems())


def test_problems_leave_out_progress_lines():
    result = CheckResult("tool", "x", False, "INFO - Running\nWARNING -  Required X\n----\nERROR - FAILED\n** Logging")
    assert result.problems() == ["Required X"]


def test_the_reference_hyperparameters_are_those_of_the_installed_rcp_file():
    installed = Path(mlperf_logging.__file__).parent / "rcp_checker" / "training_4.1.0" / "rcps_bert.json"
    by_size = {r["BS"]: r["Hyperparams"] for r in json.loads(installed.read_text()).values()}
    assert rcp_reference(4608, "4.1.0").hyperparameters == {4608: by_size[4608]}
    assert rcp_reference(1000, "4.1.0").hyperparameters == {448: by_size[448], 4608: by_size[4608]}


@pytest.mark.parametrize("ruleset, message", [
    ("5.1.0", "ruleset 5.1.0: BERT was retired after MLPerf Training v5.0"),
    ("6.0.0", "ruleset 6.0.0: BERT was retired after MLPerf Training v5.0"),
    ("3.1.0", "ruleset '3.1.0' is not supported; use one of 4.1.0, 5.0.0"),
])
def test_unsupported_rulesets_are_refused_with_the_reason(tmp_path, ruleset, message):
    log = write_run(tmp_path / "result_0.txt", seed=1)
    result = cli("check", log, "--ruleset", ruleset)
    assert result.exit_code == 2 and message in result.output
