"""The official tools on the staged copies, in a process of their own (compliance.tool_runs): the verdict of each log
is the one the compliance checker gives it alone, and tools that do not finish say so. That each runs once on the
same files: tests/compliance/test_tool_cache.py."""

from compliance import tool_runs
from compliance.check import check
from compliance.checkers import compliance_check
from tests.compliance.fakes import truncated, write_package, write_run


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


def test_tools_that_do_not_finish_say_so(tmp_path):
    log = write_run(tmp_path / "result_0.txt", seed=1)
    result, failure = tool_runs.run_tools({"logs": [str(log)]}, 60, lambda amount: None)  # no ruleset
    assert result == {} and failure.startswith("the official tools stopped with exit status 1") and \
        "KeyError: 'ruleset'" in failure
