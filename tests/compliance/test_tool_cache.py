"""What the official tools said, kept (compliance.tool_cache): `check` then `score` on the same files run each tool
once; a changed file, an entry that cannot be read, or the cache turned off runs them again."""

import pytest

from compliance import tool_cache, tool_runs
from compliance.check import check
from compliance.result_log import read_result_log
from compliance.score import score
from tests.compliance.fakes import edit_events, write_package


@pytest.fixture
def requests(monkeypatch):
    """Each request the tools get: for each system, whether the package checker and the summarizer ran."""
    asked, run_tools = [], tool_runs.run_tools

    def recording(request, timeout, advance):
        asked.append([(s["package"], s["summarize"]) for s in request.get("systems", [])])
        return run_tools(request, timeout, advance)
    monkeypatch.setattr(tool_runs, "run_tools", recording)
    return asked


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
