"""Reading result logs once: the events, the malformed lines the official parser chokes on, the figures."""

import json

import pytest

from compliance.result_log import olympic_mean, read_result_log, result_logs_in
from tests.compliance.fakes import INTERVAL, write_run


def _line(**fields) -> str:
    event = {"namespace": "", "time_ms": 1000, "event_type": "POINT_IN_TIME", "key": "seed", "value": 1,
             "metadata": {"file": "x.py", "lineno": 1}}
    event.update(fields)
    return ":::MLLOG " + json.dumps(event)


def test_events_and_figures_of_a_run(tmp_path):
    log = read_result_log(write_run(tmp_path / "result_0.txt", seed=5, accuracies=(0.03, 0.05, 0.07)))
    assert not log.malformed
    assert log.seed == 5 and log.division == "open" and log.global_batch_size == 32 and log.converged
    assert [(e.samples, e.accuracy) for e in log.evals] == [(INTERVAL, 0.03), (2 * INTERVAL, 0.05),
                                                            (3 * INTERVAL, 0.07)]
    assert log.samples_to_converge == 3 * INTERVAL
    assert log.run_minutes is not None and log.run_minutes >= 0
    # Blocks that took under a millisecond have no measurable rate and are left out.
    assert {p.samples for p in log.throughput()} <= {INTERVAL, 2 * INTERVAL, 3 * INTERVAL}


def test_aborted_run_has_no_samples_to_converge(tmp_path):
    log = read_result_log(write_run(tmp_path / "result_0.txt", seed=5, status="aborted"))
    assert log.status == "aborted" and not log.converged and log.samples_to_converge is None


def test_throughput_is_samples_per_second_between_block_start_and_eval_start(tmp_path):
    lines = [_line(key="block_start", time_ms=0, metadata={"first_epoch_num": 0, "epoch_count": 100}),
             _line(key="eval_start", time_ms=2000, metadata={"epoch_num": 100}),
             _line(key="block_start", time_ms=2500, metadata={"first_epoch_num": 100, "epoch_count": 100}),
             _line(key="eval_start", time_ms=3000, metadata={"epoch_num": 200})]
    (tmp_path / "log.txt").write_text("\n".join(lines))
    points = read_result_log(tmp_path / "log.txt").throughput()
    assert [(p.samples, p.samples_per_second) for p in points] == [(100, 50.0), (200, 200.0)]


@pytest.mark.parametrize("text, problem", [
    (':::MLLOG {"key": "seed", ', "not valid JSON"),
    (":::MLLOG [1, 2]", "not a JSON object"),
    (':::MLLOG {"time_ms": 1, "key": "seed", "value": 1}', "no metadata field"),
    (_line(time_ms="soon"), "time_ms is 'soon', not a number"),
    (_line(metadata=None), "metadata is None, not an object"),
])
def test_malformed_lines_are_named_with_their_line_number(tmp_path, text, problem):
    (tmp_path / "log.txt").write_text("\n".join([_line(), "plain output is ignored", text, _line(key="x")]))
    log = read_result_log(tmp_path / "log.txt")
    assert [e.lineno for e in log.events] == [1, 4]
    assert len(log.malformed) == 1 and log.malformed[0].lineno == 3 and problem in log.malformed[0].problem


def test_a_prefix_before_the_token_is_accepted_as_the_official_parser_does(tmp_path):
    (tmp_path / "log.txt").write_text("[rank0]: " + _line(value=7))
    assert read_result_log(tmp_path / "log.txt").seed == 7


def test_result_logs_are_listed_in_run_order(tmp_path):
    for name in ("result_10.txt", "result_2.txt", "result_0.txt", "notes.txt"):
        (tmp_path / name).write_text("")
    assert [p.name for p in result_logs_in(tmp_path)] == ["result_0.txt", "result_2.txt", "result_10.txt"]


def test_olympic_mean_drops_the_fastest_and_the_slowest():
    assert olympic_mean([5.0, 1.0, 2.0, 3.0, 100.0]) == pytest.approx(10 / 3)
    assert olympic_mean([1.0, 2.0, float("inf")]) == 2.0
    with pytest.raises(ValueError):
        olympic_mean([1.0, 2.0])
