"""The official tools in one process of their own (compliance.tool_runs, compliance.tool_runner): the verdict of
each log is the one the compliance checker gives it alone, and `check` then `score` (then `report`) on the same
files run each tool once (compliance.tool_cache)."""

import pytest

from compliance import tool_cache, tool_runs
from compliance.check import check
from compliance.checkers import compliance_check
from compliance.result_log import read_result_log
from compliance.score import score
from tests.compliance.fakes import edit_events, truncated, write_package, write_run


@pytest.fixture
def requests(monkeypatch):
    """Each request the tools get: for each system, whether the package checker and the summarizer ran."""
    asked, run_tools = [], tool_runs.run_tools

    def recording(request, timeout, advance):
        asked.append([(s["package"], s["summarize"]) for s in request.get("systems", [])])
        return run_tools(request, timeout, advance)
    monkeypatch.setattr(tool_runs, "run_tools", recording)
    return asked


def test_each_log_has_the_verdict_the_compliance_checker_gives_it_alone(tmp_path):
    org = write_package(tmp_path / "Org")
    failing = truncated(org / "results" / "cpu_micro" / "bert" / "result_6.txt")
    report = check(org)
    rows = {row.log.path.name: row.compliance for row in report.rows}
    alone = compliance_check(failing)
    assert not rows["result_6.txt"].passed and not alone.passed
    assert rows["result_6.txt"].problems() == alone.problems() != []
    assert rows["result_6.txt"].target == str(failing)
    assert all(result.passed for name, result in rows.items() if name != "result_6.txt")
    assert report.passed  # one run that failed as genuine runs fail: dropped, as the package checker drops it


def test_check_then_score_runs_each_tool_once_on_the_same_files(tmp_path, requests):
    org = write_package(tmp_path / "Org")
    assert check(org).passed
    first = score(org)
    again = score(org)
    assert requests == [[(True, False)], [(False, True)]]  # check: the package checker; score: the summarizer
    assert first.passed and again.systems == first.systems
    logs = [read_result_log(org / "results" / "cpu_micro" / "bert" / f"result_{i}.txt") for i in range(10)]
    minutes = sorted(log.run_minutes for log in logs)
    assert first.systems[0].minutes == pytest.approx(sum(minutes[1:-1]) / 8, abs=1e-5)


def test_a_changed_file_or_an_unreadable_entry_runs_the_tools_again(tmp_path, requests, monkeypatch):
    org = write_package(tmp_path / "Org")
    check(org)
    log = org / "results" / "cpu_micro" / "bert" / "result_2.txt"
    edit_events(log, lambda _, e: dict(e, metadata=dict(e["metadata"], lineno=1)) if e["key"] == "seed" else e)
    check(org)
    for entry in tool_cache.cache_folder().glob("*.json"):
        entry.write_text("{not json")
    check(org)
    assert requests == [[(True, False)]] * 3
    monkeypatch.setenv(tool_cache.ENV, "off")
    check(org)
    check(org)
    assert len(requests) == 5


def test_tools_that_do_not_finish_say_so(tmp_path):
    log = write_run(tmp_path / "result_0.txt", seed=1)
    result, failure = tool_runs.run_tools({"logs": [str(log)]}, 60, lambda amount: None)  # no ruleset
    assert result == {} and failure.startswith("the official tools stopped with exit status 1") and \
        "KeyError: 'ruleset'" in failure
