"""The command line in this process, and the ten-run package the compliance tests share (its fixtures are in
tests/compliance/conftest.py)."""

from __future__ import annotations

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


@dataclass(frozen=True)
class MicroPackage:
    system: Path  # the descriptor of the runs
    logs: Path  # the run_and_time.sh logs folder
    out: Path  # --out
    org: Path  # --out/ORG
    package_result: Result
