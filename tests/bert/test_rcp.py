"""The reference convergence points as a descriptor uses them (bert.rcp): read from the installed mlperf-logging's
file through its own RCP checker, never copied; a ruleset without RCPs and a batch size no RCP has are one line."""

import json
import math

import pytest
from mlperf_logging.rcp_checker.rcp_checker import RCP_Checker

from bert.mlperf_rules import DEFAULT_RULESET, RULESETS, converging_eval, mlperf_eval_interval
from bert.rcp import (
    HYPERPARAMETER_FIELDS,
    RcpError,
    checker_choice,
    convergence,
    nearest_points,
    point_for,
    rcp_file,
    reference_points,
    safe_sample_cap,
    sample_cap_floor,
)


@pytest.mark.parametrize("ruleset", RULESETS)
def test_every_rcp_of_the_installed_file_with_its_hyperparameters_under_the_optimizers_names(ruleset):
    raw = json.loads(rcp_file(ruleset).read_text())
    points = reference_points(ruleset)
    assert sorted(points) == sorted(record["BS"] for record in raw.values())
    assert len(points) == 13 and min(points) == 256 and max(points) == 16384
    for name, record in raw.items():
        point = points[record["BS"]]
        assert point.name == name
        assert point.hyperparameters == {field: record["Hyperparams"][key]
                                         for key, field in HYPERPARAMETER_FIELDS.items()}
        assert point.samples == tuple(sorted(record["Epochs to converge"]))


def test_the_convergence_statistics_are_the_rcp_checkers():
    checker = RCP_Checker("training", DEFAULT_RULESET, "bert", verbose=False)
    at_3072 = convergence(3072, DEFAULT_RULESET)
    record = next(r for r in checker.rcp_data.values() if r["BS"] == 3072)
    assert (at_3072.mean, at_3072.stdev) == (record["RCP Mean"], record["RCP Stdev"])
    assert at_3072.slowest == max(record["Epochs to converge"])
    # Between RCPs: the checker's own interpolation over the RCPs it keeps after pruning.
    between = convergence(768, DEFAULT_RULESET)
    low, high = checker._find_top_min_rcp(768, "pruned_rcps"), checker._find_bottom_max_rcp(768, "pruned_rcps")
    _, interpolated = checker._create_interp_rcp(768, low, high)
    assert between.mean == interpolated["RCP Mean"] and "interpolated" in between.source
    assert convergence(20_000, DEFAULT_RULESET) is None  # above the largest RCP the checker has none


def test_the_checker_choice_is_among_the_pruned_rcps_as_the_rcp_checker_chooses():
    # 3072 and 256 are RCPs the checker prunes: it judges 3072 by the interpolation around it, 256 by its
    # smallest kept RCP, while convergence() keeps an RCP's own runs at its batch size.
    assert checker_choice(448, DEFAULT_RULESET).how == "reference"
    at_3072 = checker_choice(3072, DEFAULT_RULESET)
    assert at_3072.how == "interpolated" and [r["BS"] for r in at_3072.sources] == [448, 4608]
    assert at_3072.record["RCP Mean"] != convergence(3072, DEFAULT_RULESET).mean
    below = checker_choice(256, DEFAULT_RULESET)
    assert below.how == "smallest reference" and below.record["BS"] == 448
    assert checker_choice(20_000, DEFAULT_RULESET) is None


@pytest.mark.parametrize("batch", [448, 768, 3072, 16384])
def test_the_derived_cap_lets_the_slowest_reference_run_converge_and_is_never_below_the_floor(batch):
    reference, interval = convergence(batch, DEFAULT_RULESET), mlperf_eval_interval(batch)
    cap = safe_sample_cap(reference, batch, interval)
    steps, _ = converging_eval(reference.slowest, batch, interval)
    assert cap >= steps * batch and cap >= sample_cap_floor(reference, interval) and cap % batch == 0
    assert sample_cap_floor(reference, interval) == math.ceil(reference.mean) + interval


def test_a_batch_no_rcp_has_is_one_line_naming_the_nearest():
    with pytest.raises(RcpError) as info:
        point_for(2048, DEFAULT_RULESET)
    assert "\n" not in str(info.value)
    assert "no reference convergence point has global batch 2048" in str(info.value)
    assert "the nearest are 1536 and 3072" in str(info.value)
    assert [p.batch_size for p in nearest_points(2048, DEFAULT_RULESET)] == [1536, 3072]
    assert [p.batch_size for p in nearest_points(100_000, DEFAULT_RULESET)] == [16384]


@pytest.mark.parametrize("ruleset, said", [
    ("6.0.0", "has no reference convergence points for BERT under it (no training_6.0.0/rcps_bert.json)"),
    ("7.7.7", "has no reference convergence points for BERT under it"),
    ("5.1.0", "BERT was retired after MLPerf Training v5.0"),
])
def test_a_ruleset_without_bert_rcps_is_one_line(ruleset, said):
    with pytest.raises(RcpError) as info:
        reference_points(ruleset)
    assert said in str(info.value) and "\n" not in str(info.value)
