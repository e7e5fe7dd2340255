"""The verdict composed in one place (compliance.verdict): a folder's runs judged once before the tools, each row's
count with the compliance checker's verdict, the RCP checker's line, and a package's report cut to one system."""

from pathlib import Path

from compliance.checkers import CheckResult
from compliance.findings import WARNING, Finding
from compliance.result_log import read_result_log
from compliance.verdict import CheckReport, LogRow, ToolRun, judge_folder, logged_division, rcp_tool_run
from tests.compliance.fakes import edit_lines, truncated, write_runs

PASSED = CheckResult("compliance checker", "x", True, "")


def _logs(folder: Path) -> list:
    return [read_result_log(folder / f"result_{i}.txt") for i in range(10)]


def test_a_folder_is_judged_once_before_the_tools(tmp_path):
    folder = write_runs(tmp_path / "logs")
    truncated(folder / "result_4.txt")
    judged = judge_folder(folder, _logs(folder), "open", "5.0.0")
    assert judged.readable and judged.findings == ()
    counts = judged.counts_before_tools()
    assert list(counts) == ["result_4.txt"] and counts["result_4.txt"].droppable
    rows = judged.rows("sys/", {"result_0.txt": PASSED})
    assert [r.label for r in rows][:2] == ["sys/result_0.txt", "sys/result_1.txt"]
    assert rows[0].why_not_counted is None and rows[1].why_not_counted == "not checked"  # the checker did not run
    edit_lines(folder / "result_7.txt", lambda line: line[:40] if '"key": "eval_accuracy"' in line else line)
    assert not judge_folder(folder, _logs(folder), "open", "5.0.0").readable  # a damaged log blocks the tools


def test_the_division_the_logs_agree_on():
    class Logged:
        def __init__(self, division):
            self.division = division
    assert logged_division([Logged("closed"), Logged("closed")]) == "closed"
    assert logged_division([Logged("closed"), Logged("open")]) is None
    assert logged_division([Logged("Closed")]) is None and logged_division([]) is None


def test_the_rcp_checkers_line_applies_to_the_closed_division_only():
    folder = Path("logs")
    assert rcp_tool_run(folder, "open", True, None).passed  # n/a
    assert not rcp_tool_run(folder, "open", True, None).applies
    assert rcp_tool_run(folder, None, True, None).note == "not run: the division is unclear"
    unreadable = rcp_tool_run(folder, "closed", False, None)
    assert not unreadable.passed and unreadable.note.startswith("not run: it would crash on or misjudge the logs")
    ran = rcp_tool_run(folder, "closed", True, CheckResult("RCP checker", "logs", True, ""))
    assert ran.passed and ran.note == ""
    assert rcp_tool_run(folder, "closed", True, None, "not run: the package checker stopped").note == \
        "not run: the package checker stopped"


def test_a_lone_log_passes_only_when_its_run_counts(tmp_path):
    folder = write_runs(tmp_path / "logs", count=2)
    sound, cut = read_result_log(folder / "result_0.txt"), read_result_log(truncated(folder / "result_1.txt"))
    log = CheckReport(folder / "result_0.txt", "log", "5.0.0", None, [LogRow("result_0.txt", sound, (), PASSED)])
    assert log.passed
    log.rows = [LogRow("result_1.txt", cut, (), PASSED)]
    assert not log.passed  # a folder may drop it under olympic scoring; a lone log is that one run
    log.tools.append(ToolRun("RCP checker", "logs", None))
    log.rows = [LogRow("result_0.txt", sound, (), PASSED)]
    assert not log.passed  # a tool that applies and did not run


def test_a_packages_report_cut_to_one_system(tmp_path):
    org = tmp_path / "Org"
    report = CheckReport(org, "package", "5.0.0", None, descriptions={"a": {}, "b": {}}, systems=["a", "b"])
    report.findings = [Finding(str(org / "results" / "a" / "bert"), "of a"), Finding(str(org / "systems" / "b.json"),
                       "of b"), Finding(str(org), "of the package", WARNING)]
    report.tools = [ToolRun("package checker", str(org / "results" / "b"), None)]
    part = report.about("a")
    assert [f.message for f in part.findings] == ["of a", "of the package"]
    assert part.tools == [] and part.descriptions == {"a": {}} and part.systems == ["a"]
    assert not part.passed and not report.about("b").passed
