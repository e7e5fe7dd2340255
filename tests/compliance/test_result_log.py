"""Reading result logs once: the events, the malformed lines the official parser chokes on, the figures."""

import json
import math
import time

import pytest
from mlperf_logging.compliance_checker.mlp_parser.ruleset_500 import strip_and_dedup

from compliance.result_log import MAX_MLLOG_LINE, MAX_PARSE_WORK, olympic_mean, read_result_log, result_logs_in
from tests.compliance.fakes import INTERVAL, seed_accuracy, write_run, write_runs
from tests.helpers.compliance import cli, ends_in_one_line


def _line(**fields) -> str:
    event = {"namespace": "", "time_ms": 1000, "event_type": "POINT_IN_TIME", "key": "seed", "value": 1,
             "metadata": {"file": "x.py", "lineno": 1}}
    event.update(fields)
    return ":::MLLOG " + json.dumps(event)


def test_events_and_figures_of_a_run(tmp_path):
    log = read_result_log(write_run(tmp_path / "result_0.txt", seed=5, accuracies=(0.03, 0.05, 0.07)))
    assert not log.malformed
    assert log.seed == 5 and log.division == "open" and log.global_batch_size == 32 and log.converged
    assert [(e.samples, e.accuracy) for e in log.evals] == [(INTERVAL, seed_accuracy(0.03, 5)),
                                                            (2 * INTERVAL, seed_accuracy(0.05, 5)),
                                                            (3 * INTERVAL, seed_accuracy(0.07, 5))]
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


def _line_of(characters: int) -> str:
    """A valid :::MLLOG line of `characters` characters (its value a string of colons: the official parser's worst)."""
    short = _line(value="")
    return short.replace('"value": ""', '"value": "' + ":" * (characters - len(short)) + '"')


def test_lines_the_official_parser_cannot_read_in_bounded_time_are_refused_unread(tmp_path):
    """The official parser strips each :::MLLOG line with re.sub(".*:::MLLOG ", ...), in time growing with the
    square of its length: a megabyte line kept `check` busy for ten minutes. Such a log is refused, in one sentence,
    before it is parsed; a line of the largest length handed over is read."""
    (tmp_path / "longest.txt").write_text(_line() + "\n" + _line_of(MAX_MLLOG_LINE - 1) + "\n")
    assert read_result_log(tmp_path / "longest.txt").unreadable is None
    (tmp_path / "long.txt").write_text(_line() + "\n" + _line_of(1 << 20) + "\n")
    started = time.perf_counter()
    said = read_result_log(tmp_path / "long.txt").unreadable
    assert time.perf_counter() - started < 5
    assert said.startswith(f"line 2 is a :::MLLOG line of {(1 << 20) + 1:,} characters, over the 4,096 that are "
                           "handed to the official tools: their parser takes time growing with the square")
    many = _line_of(MAX_MLLOG_LINE - 1) + "\n"
    (tmp_path / "many.txt").write_text(many * (MAX_PARSE_WORK // MAX_MLLOG_LINE ** 2 + 1))
    said = read_result_log(tmp_path / "many.txt").unreadable
    assert said.startswith("its 120 :::MLLOG lines (up to 4,096 characters) would keep the official parser busy")


def test_the_official_parser_reads_the_longest_line_handed_to_it_quickly():
    """What the cap is for: the official parser's time for one line of MAX_MLLOG_LINE characters (measured 0.1 s at
    worst on a 2-core machine under load), and for one 4 times longer (16 times more: the square of the length)."""
    def parse_seconds(characters: int) -> float:
        started = time.perf_counter()
        strip_and_dedup([_line_of(characters) + "\n"])
        return time.perf_counter() - started
    at_cap, longer = parse_seconds(MAX_MLLOG_LINE), parse_seconds(4 * MAX_MLLOG_LINE)
    assert at_cap < 1 and longer > 6 * at_cap


@pytest.mark.parametrize("field, value", [("time_ms", "9" * 400), ("value", "9" * 400), ("value", "9" * 3900),
                                          ("time_ms", "-" + "9" * 3900)])
def test_numbers_of_hundreds_of_digits_are_read_as_infinities(tmp_path, field, value):
    """A 400-digit time_ms overflowed float(); a 3900-digit one is near Python's int() limit (4300 digits; a line
    holding more is over the length handed to the official tools, and refused unread)."""
    text = _line(key="eval_accuracy", metadata={"epoch_num": 1}).replace(f'"{field}": ' + ("1000" if field ==
                                                                                           "time_ms" else "1"),
                                                                          f'"{field}": {value}', 1)
    (tmp_path / "log.txt").write_text(text + "\n")
    log = read_result_log(tmp_path / "log.txt")
    assert not log.malformed and log.unreadable is None
    (event,) = log.events
    assert abs(event.time_ms if field == "time_ms" else event.value) == math.inf
    (tmp_path / "log.txt").write_text(text.replace(value, "9" * 5000) + "\n")
    assert read_result_log(tmp_path / "log.txt").unreadable.startswith("line 1 is a :::MLLOG line of 5,")


def test_a_line_nested_past_the_parser_is_malformed_and_a_deeper_one_refused(tmp_path):
    deep = '[' * 2000 + ']' * 2000
    (tmp_path / "log.txt").write_text(_line() + "\n" + ":::MLLOG " + deep + "\n")
    (malformed,) = read_result_log(tmp_path / "log.txt").malformed
    assert malformed.lineno == 2 and malformed.problem.startswith("nested deeper than a JSON parser follows")
    (tmp_path / "deeper.txt").write_text(":::MLLOG " + '{"a": ' * 100_000 + "1" + "}" * 100_000 + "\n")
    assert read_result_log(tmp_path / "deeper.txt").unreadable.startswith("line 1 is a :::MLLOG line of 700,011 ")


def test_the_system_a_log_prints_is_read(tmp_path):
    """NVIDIA's scripts print the system a run sees as a :::SYSJSON line (a shell's echo leaves a quote after it)."""
    (tmp_path / "log.txt").write_text("+ echo ':::SYSJSON {\"accelerator_model_name\": \"Dell B200\"}'\n"
                                      ":::SYSJSON [1]\n:::SYSJSON {\"cut\n" + _line() + "\n")
    assert read_result_log(tmp_path / "log.txt").stated_systems == ({"accelerator_model_name": "Dell B200"},)


def test_a_folder_under_a_result_name_is_refused_unread(tmp_path):
    (tmp_path / "result_10.txt").mkdir()
    assert read_result_log(tmp_path / "result_10.txt").unreadable.startswith("is a folder, not a regular file")


def test_a_log_the_official_parser_cannot_read_in_bounded_time_ends_in_one_line(tmp_path):
    """A 1.1 MB log of one 1 MB :::MLLOG line kept the official parser busy for 600 s, then a TimeoutExpired
    traceback; nested 100,000 deep, a RecursionError."""
    logs = write_runs(tmp_path / "logs")
    body = json.dumps({"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "x",
                       "value": "v" * (1 << 20), "metadata": {}})
    (logs / "result_4.txt").write_text((logs / "result_4.txt").read_text() + f":::MLLOG {body}\n")
    (logs / "result_5.txt").write_text(":::MLLOG " + "[" * 100_000 + "]" * 100_000 + "\n")
    started = time.perf_counter()
    result = cli("check", logs)
    assert time.perf_counter() - started < 300
    ends_in_one_line(result, f"result_4.txt: line 43 is a :::MLLOG line of {len(body) + 10:,} characters, over the "
                     "4,096 that are handed to the official tools")
    ends_in_one_line(result, "result_5.txt: line 1 is a :::MLLOG line of 200,010 characters")
