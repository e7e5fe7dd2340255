"""What `check`, `score` and `review` print for a folder of submissions (compliance.overview): each submission, then
one table of them all and the verdict of them all, naming the ones that fail; and the review's table."""

from pathlib import Path

from rich.console import Console

from compliance.check import TreeCheck
from compliance.findings import Finding
from compliance.overview import print_review, print_tree_check
from compliance.review import ReviewRow
from compliance.verdict import CheckReport


def _text(show, *args) -> str:
    console = Console(record=True, width=300)
    show(*args, console)
    return console.export_text()


def _submission(name: str, systems: list[str], error: str | None = None) -> CheckReport:
    report = CheckReport(Path("round") / name, "package", "5.0.0", None, systems=systems)
    report.findings = [Finding(f"round/{name}", error)] if error else []
    return report


def test_several_submissions_end_in_one_table_and_one_verdict_naming_those_that_fail():
    tree = TreeCheck(Path("round"), "5.0.0", [_submission("OrgA", ["a"]), _submission("OrgB", ["b1", "b2"], "bad"),
                                              _submission("OrgD", [], "no system")], skipped=["OrgC"])
    text = _text(print_tree_check, tree)
    assert text.count("VERDICT: FAIL") == 2 and "VERDICT: PASS" in text  # each submission's own verdict
    rows = [[cell.strip() for cell in line.split("│")[1:4]] for line in text.splitlines() if line.startswith("│ Org")]
    assert rows == [["OrgA", "1", "PASS"], ["OrgB", "2", "FAIL"], ["OrgD", "0", "FAIL"]]
    assert "skipped (no BERT results): OrgC" in text
    assert text.rstrip().endswith("VERDICT (all 3 submissions): FAIL (2 of 3: OrgB, OrgD)")
    alone = _text(print_tree_check, TreeCheck(Path("round"), "5.0.0", [_submission("OrgA", ["a"])]))
    assert "VERDICT (all" not in alone and alone.rstrip().endswith("VERDICT: PASS")  # one submission: its own


def test_the_review_table_shows_what_a_system_lacks_as_a_dash():
    row = ReviewRow("OrgA", "a", "closed", "NVIDIA H100", 8, "PASS", 12.3456, "PASS", 0, 1, "", "Pass", 4.25, 1.0,
                    2.5e6, 98.765, 1234.56, 448)
    bare = ReviewRow("OrgB", "b", "open", "-", None, "NOT RUN", None, "FAIL", 2, 0, "an error", "-", None, None,
                     None, None, None, None)
    lines = [line for line in _text(print_review, [row, bare]).splitlines() if line.startswith("│ Org")]
    cells = [[cell.strip() for cell in line.split("│")[1:-1]] for line in lines]
    assert cells[0] == ["OrgA/a", "PASS", "12.3456", "PASS", "Pass", "+4.2%", "8", "98.8", "1,234.6"]
    assert cells[1] == ["OrgB/b", "NOT RUN", "-", "FAIL", "-", "-", "-", "-", "-"]
