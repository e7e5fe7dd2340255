"""The command line in this process, what the compliance tests ask of its output, and the ten-run package they
share (its fixtures are in tests/compliance/conftest.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner, Result

from bert.cli import main

# cpu_micro with a lower development target that its runs reach after a few evals, so that ten real runs stay
# short; the model, data and batch size are cpu_micro's.
MICRO_EVAL = {"target_accuracy": 0.03, "samples": 256, "interval_samples": 512, "batch_size": 256}


def cli(*args: object) -> Result:
    """`mlperf-bert ARGS` in this process; fails the test on a traceback (any exception but an exit)."""
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"mlperf-bert {' '.join(map(str, args))} raised {result.exception!r}\n{result.output}")
    assert "Traceback" not in result.output
    return result


def check_fails(*args: object) -> str:
    """The output of `mlperf-bert check ARGS`, which must fail (exit 1, VERDICT: FAIL)."""
    result = cli("check", *args)
    assert result.exit_code == 1, result.output
    assert "VERDICT: FAIL" in result.output
    return result.output


def ends_in_one_line(result: Result, said: str) -> None:
    """The command ended with a verdict (or an error) in plain words: `said` on one line, no traceback."""
    assert result.exit_code in (1, 2), result.output
    assert "Traceback" not in result.output and "Error: 3:" not in result.output
    assert any(said in line for line in result.output.splitlines()), result.output


def olympic_minutes_of_lines(logs_dir: Path) -> float:
    """The score recomputed from the raw lines, without compliance/: run_start to run_stop, minutes, olympic."""
    minutes = []
    for path in logs_dir.glob("result_*.txt"):
        stamps = {}
        for line in path.read_text().splitlines():
            if line.startswith(":::MLLOG "):
                event = json.loads(line[len(":::MLLOG "):])
                stamps.setdefault(event["key"], event["time_ms"])
        minutes.append((stamps["run_stop"] - stamps["run_start"]) / 60_000)
    assert len(minutes) == 10
    minutes.sort()
    return sum(minutes[1:-1]) / 8


@dataclass(frozen=True)
class MicroPackage:
    system: Path  # the descriptor of the runs
    logs: Path  # the run_and_time.sh logs folder
    out: Path  # --out
    org: Path  # --out/ORG
    package_result: Result
