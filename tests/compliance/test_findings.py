"""A problem in plain words (compliance.findings): shown as where and what; an error fails the verdict, a warning does
not, and a finding that blocks fails it whatever its level, since the official tools did not run on that input."""

from pathlib import Path

from compliance.findings import ERROR, WARNING, Finding
from compliance.verdict import CheckReport


def _report(*findings: Finding) -> CheckReport:
    return CheckReport(Path("logs"), "folder", "5.0.0", "open", findings=list(findings))


def test_a_finding_says_where_and_what_and_is_an_error_unless_told():
    finding = Finding("logs/result_3.txt", "no run_stop line")
    assert str(finding) == "logs/result_3.txt: no run_stop line"
    assert finding.level == ERROR and not finding.blocks


def test_an_error_fails_the_verdict_a_warning_does_not_and_what_blocks_always_does():
    warned = _report(Finding("logs", "the official tools ignore notes.txt", WARNING))
    assert warned.passed and warned.errors == [] and not warned.blocked
    failed = _report(Finding("logs", "mixed batch sizes"))
    assert not failed.passed and [f.message for f in failed.errors] == ["mixed batch sizes"]
    blocked = _report(Finding("logs/result_0.txt", "an eval_accuracy line has no epoch_num", WARNING, blocks=True))
    assert blocked.blocked and not blocked.passed and blocked.errors == []
