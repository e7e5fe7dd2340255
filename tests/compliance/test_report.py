"""`report` (compliance.report): the Markdown report of a package and its figures, replaced by the next report."""

import re

from tests.helpers.compliance import cli, olympic_minutes_of_lines


def test_report_writes_markdown_and_its_figures(micro_package, tmp_path):
    out = tmp_path / "report"
    result = cli("report", micro_package.org, "-o", out)
    assert result.exit_code == 0, result.output
    markdown = (out / "report.md").read_text()
    assert "## Verdict: PASS" in markdown and "## System `cpu_micro`" in markdown
    figures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", markdown)
    assert figures == ["cpu_micro_accuracy.png", "cpu_micro_run_times.png", "cpu_micro_throughput.png"]
    for name in figures:
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    runs = [line for line in markdown.splitlines() if line.startswith("| result_")]
    assert len(runs) == 10
    assert sum(line.endswith("| scored |") for line in runs) == 8
    assert f"| {olympic_minutes_of_lines(micro_package.logs):,.4f} |" in markdown
    again = cli("report", micro_package.org, "-o", out)  # an earlier report is replaced
    assert again.exit_code == 0
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == sorted(figures + ["report.md"])
