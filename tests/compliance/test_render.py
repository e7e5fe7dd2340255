"""What `check` and `score` print for one submission, folder or log (compliance.render): the table of logs, the
problems (errors first), the compliance checker's messages said once for every log it fails the same way, a failing
tool's own lines (at most MAX_TOOL_LINES), and the verdict with what failed it."""

from rich.console import Console

from compliance.checkers import CheckResult
from compliance.findings import WARNING, Finding
from compliance.render import MAX_TOOL_LINES, print_check
from compliance.result_log import read_result_log
from compliance.verdict import CheckReport, LogRow, ToolRun
from tests.compliance.fakes import write_runs


def _printed(report: CheckReport) -> list[str]:
    console = Console(record=True, width=300)
    print_check(report, console)
    return [line.rstrip() for line in console.export_text().splitlines()]


def test_a_failing_folder_is_printed_problem_by_problem_then_its_verdict(tmp_path):
    folder = write_runs(tmp_path / "logs", count=3)
    logs = [read_result_log(folder / f"result_{i}.txt") for i in range(3)]
    said = "WARNING -  CHECK for 'init_stop' failed in line 7:\nERROR - FAILED"
    failing = {i: CheckResult("compliance checker", str(folder / f"result_{i}.txt"), False, said) for i in (1, 2)}
    rows = [LogRow(log.path.name, log, (), failing.get(i, CheckResult("c", str(log.path), True, "")))
            for i, log in enumerate(logs)]
    report = CheckReport(folder, "folder", "5.0.0", "open", rows, skipped=["a_vision"])
    report.findings = [Finding(str(folder), "seeds repeated across runs", WARNING),
                       Finding(str(folder), "mixed batch sizes")]
    tool_output = "\n".join(f"ERROR - problem {n}" for n in range(MAX_TOOL_LINES + 3))
    report.tools = [ToolRun("RCP checker", str(folder), CheckResult("RCP checker", str(folder), False, tool_output))]
    lines = _printed(report)
    assert lines[0] == f"{folder} (ruleset 5.0.0, open division)"
    assert lines[1] == "skipped (no bert/ results): a_vision"
    problems = [line for line in lines if line.startswith(("ERROR", "WARNING", "FAIL", "PASS", "VERDICT", " "))]
    assert problems[:2] == [f"ERROR   {folder}: mixed batch sizes", f"WARNING {folder}: seeds repeated across runs"]
    assert problems[2:4] == ["FAIL    compliance checker (result_1.txt, result_2.txt):",
                             "          CHECK for 'init_stop' failed in line 7:"]
    assert problems[4] == f"FAIL    RCP checker ({folder}):"
    assert problems[5:5 + MAX_TOOL_LINES] == [f"          problem {n}" for n in range(MAX_TOOL_LINES)]
    assert problems[5 + MAX_TOOL_LINES] == "          ... 3 more lines"
    assert lines[-1] == "VERDICT: FAIL (1 error(s) above; 2 log(s) fail the compliance checker; RCP checker did not " \
                        "pass)"
    table = [line for line in lines if "result_" in line and "│" in line]
    assert [line.split("│")[2].strip() for line in table] == ["PASS", "FAIL", "FAIL"]


def test_a_lone_log_that_does_not_count_says_why(tmp_path):
    folder = write_runs(tmp_path / "logs", count=1)
    log = read_result_log(folder / "result_0.txt")
    report = CheckReport(folder / "result_0.txt", "log", "5.0.0", None, [LogRow("result_0.txt", log, (), None)])
    assert _printed(report)[-1] == "VERDICT: FAIL (the run does not count: not checked)"
    report.rows = [LogRow("result_0.txt", log, (), CheckResult("compliance checker", str(log.path), True, ""))]
    assert _printed(report)[-1] == "VERDICT: PASS"
