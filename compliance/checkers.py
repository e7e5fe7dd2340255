"""The official mlperf-logging checkers, run as the reviewers run them, with their real verdict.

Each checker runs in a subprocess inside a scratch directory (they write log files into the current
directory) with the ruleset always given explicitly (their defaults point at rulesets that no longer know
BERT). The verdict is read from what the tool prints where its exit code cannot be trusted.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

RULESETS = ("4.1.0", "5.0.0")


@dataclass(frozen=True)
class CheckResult:
    tool: str
    target: str
    passed: bool
    output: str

    def problems(self) -> list[str]:
        """The tool's own error and warning lines, for showing to the user."""
        keep = ("ERROR", "WARNING", "Required", "FAILED", "Failed", "error", "not ")
        return [line.strip() for line in self.output.splitlines() if line.strip() and any(k in line for k in keep)]


def _run(args: list[str], cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="mlperf-check-") as scratch:
        return subprocess.run([sys.executable, "-m", *args], cwd=cwd or scratch, capture_output=True, text=True,
                              timeout=timeout)


def compliance_check(log: str | Path, ruleset: str = "5.0.0") -> CheckResult:
    """`python -m mlperf_logging.compliance_checker --usage training --ruleset R LOG`."""
    log = Path(log).resolve()
    proc = _run(["mlperf_logging.compliance_checker", "--usage", "training", "--ruleset", ruleset, str(log)])
    output = proc.stdout + proc.stderr
    passed = proc.returncode == 0 and "SUCCESS" in output and "FAILED" not in output
    return CheckResult("compliance_checker", str(log), passed, output)
