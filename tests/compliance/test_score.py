"""`score` (compliance.score): the olympic mean of the run times, from the result summarizer run on a copy."""

import re

from tests.helpers.compliance import cli, olympic_minutes_of_lines


def test_score_is_the_olympic_mean_of_the_run_times(micro_package):
    result = cli("score", micro_package.out)  # the --out folder, which holds the one ORG
    assert result.exit_code == 0, result.output
    row = re.search(r"cpu_micro\s*│\s*open\s*│\s*([0-9.]+)\s*│\s*([0-9,]+) \(logs\)\s*│\s*n/a \(open division\)\s*"
                    r"│\s*1\.0000\s*│\s*10", result.output)
    assert row, result.output
    # The score is printed to 5 decimals: half a unit of the last one, plus float rounding of the two sides.
    assert abs(float(row.group(1)) - olympic_minutes_of_lines(micro_package.logs)) <= 5e-6 + 1e-12
    assert "VERDICT: PASS" in result.output
    assert not list(micro_package.org.rglob("scaling.json"))  # the tools ran on a copy
