"""The MLPerf rules as data (bert.mlperf_rules): the eval interval formula, and the system description as the
official tools read it."""

from bert.mlperf_rules import SYSTEM_DESCRIPTION_FIELDS, description_problems, mlperf_eval_interval


def test_mlperf_eval_interval_formula():
    assert mlperf_eval_interval(448) == 150_000
    assert mlperf_eval_interval(3072) == 175_000
    assert mlperf_eval_interval(16384) == 325_000


def _description(**changes) -> dict:
    desc = {key: "" for key in SYSTEM_DESCRIPTION_FIELDS}
    desc.update(submitter="Org", division="open", status="Available on-premise", system_name="box",
                number_of_nodes="1", host_processors_per_node="2", accelerators_per_node="8",
                other_software_stack={"cuda_version": "12.4"})  # an object where the tools read nothing: as published
    desc.update(changes)
    return desc


def test_a_complete_description_has_no_problem():
    assert description_problems(_description()) == []


def test_each_problem_names_its_field_and_the_fix():
    desc = _description(division="Closed", accelerators_per_node=8, number_of_nodes="0", status="Available")
    del desc["cooling"]
    desc["gpu_clock"] = "1.9 GHz"
    problems = dict(description_problems(desc))
    assert problems["cooling"].startswith("missing; the MLPerf system description needs all 33 fields")
    assert problems["gpu_clock"].startswith("not an MLPerf system description field")
    assert problems["accelerators_per_node"] == ('must be a string, got 8; write it in quotes, as "8" (the official '
                                                 'tools read it as text)')
    assert problems["division"] == "must be \"closed\" or \"open\" (lower case), got 'Closed'"
    assert problems["status"].startswith("must be one of 'Available on-premise'")
    assert problems["number_of_nodes"] == 'must be at least "1"'
    assert dict(description_problems(_description(host_processors_per_node="two")))["host_processors_per_node"] \
        == "must be a whole number (as \"8\"), got 'two'"
