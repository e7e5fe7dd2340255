"""The official mlperf-logging checkers, run as the reviewers run them, with their real verdict.

`compliance_check(log)`, `rcp_check(folder)` and `system_desc_check(json)` run one tool's command line on a file
of the harness's own (a run's log, a descriptor's description) and return a `CheckResult` (passed, the tool's
output); `rcp_batch_sizes` and `rcp_reference` give the RCP checker's reference points. What a submission is
checked with is compliance.tool_runs: the tools on copies of what was judged (compliance.staging). The ruleset is
always given (`require_ruleset` refuses one that does not know BERT). Each tool runs in a subprocess in a scratch
directory. How each tool is run, what each one does and where its exit code cannot be trusted: docs/submission.md,
"How the official tools are run".
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from bert.mlperf_rules import BENCHMARK, DEFAULT_RULESET, RULESETS
from bert.rcp import checker_choice, pruned_batch_sizes
from compliance.errors import UsageError

USAGE = "training"
PACKAGE_SUCCESS = "PACKAGE CHECKER FOUND NO ERRORS, SUCCESS !"
SYSTEM_DESC_PASSED = "System description checker passed for"


class RulesetError(UsageError):
    pass


def require_ruleset(ruleset: str) -> str:
    """The ruleset itself when this harness supports it; RulesetError saying why and what to use otherwise."""
    if ruleset in RULESETS:
        return ruleset
    try:
        version = tuple(int(part) for part in ruleset.split("."))
    except ValueError:
        version = ()
    if len(version) == 3 and version >= (5, 1, 0):
        raise RulesetError(f"ruleset {ruleset}: BERT was retired after MLPerf Training v5.0, and the {ruleset} "
                           "checkers no longer know it (the package checker skips the bert folder and still "
                           "prints success); use 5.0.0 (or 4.1.0)")
    raise RulesetError(f"ruleset {ruleset!r} is not supported; use one of {', '.join(RULESETS)}")


@dataclass(frozen=True)
class CheckResult:
    tool: str
    target: str
    passed: bool
    output: str

    def problems(self) -> list[str]:
        """The tool's own messages beyond its progress lines, for showing to the user."""
        lines = []
        for line in self.output.splitlines():
            text = line.strip()
            if (not text or text.startswith(("INFO -", "** ")) or set(text) == {"-"}
                    or text in ("ERROR - FAILED", "FAILED")):
                continue
            lines.append(text.removeprefix("WARNING -").removeprefix("ERROR -").strip())
        return lines


def _run(args: list[str], cwd: Path, timeout: float = 600) -> tuple[str, int]:
    proc = subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)
    return proc.stdout + proc.stderr, proc.returncode


def compliance_check(log: str | Path, ruleset: str = DEFAULT_RULESET) -> CheckResult:
    """`python -m mlperf_logging.compliance_checker --usage training --ruleset R LOG`."""
    log = Path(log).resolve()
    with tempfile.TemporaryDirectory(prefix="mlperf-check-") as scratch:
        output, code = _run(["mlperf_logging.compliance_checker", "--usage", USAGE, "--ruleset",
                             require_ruleset(ruleset), str(log)], Path(scratch))
    verdicts = {line.strip() for line in output.splitlines()} & {"INFO - SUCCESS", "ERROR - FAILED"}
    return CheckResult("compliance checker", str(log), code == 0 and verdicts == {"INFO - SUCCESS"}, output)


def rcp_check(folder: str | Path, ruleset: str = DEFAULT_RULESET) -> CheckResult:
    """`python -m mlperf_logging.rcp_checker DIR --rcp_usage training --rcp_version R` (its exit code is honest)."""
    folder = Path(folder).resolve()
    with tempfile.TemporaryDirectory(prefix="mlperf-rcp-") as scratch:
        output, code = _run(["mlperf_logging.rcp_checker", str(folder), "--rcp_usage", USAGE, "--rcp_version",
                             require_ruleset(ruleset)], Path(scratch))
    return CheckResult("RCP checker", str(folder), code == 0 and "RCP test PASSED" in output, output)


def system_desc_check(system_json: str | Path, ruleset: str = DEFAULT_RULESET) -> CheckResult:
    """`python -m mlperf_logging.system_desc_checker FILE training R`; it exits 0 either way."""
    system_json = Path(system_json).resolve()
    with tempfile.TemporaryDirectory(prefix="mlperf-sysdesc-") as scratch:
        output, _ = _run(["mlperf_logging.system_desc_checker", str(system_json), USAGE, require_ruleset(ruleset)],
                         Path(scratch))
    return CheckResult("system description checker", str(system_json), SYSTEM_DESC_PASSED in output, output)


@dataclass(frozen=True)
class SummaryRow:
    """The result summarizer's figures for one system (None where it reports none)."""

    system: str  # the results folder name
    division: str
    minutes: float | None
    samples_to_converge: float | None
    rcp: str  # "Pass", "Fail", "Missing", ...; empty for the open division
    scaling_factor: float | None


@dataclass(frozen=True)
class Scoring:
    package: CheckResult
    summarizer_output: str
    rows: tuple[SummaryRow, ...]


def summary_rows(records: list) -> tuple[SummaryRow, ...]:
    """The rows of the result summarizer's summary_detailed.json."""
    rows = []
    for record in records:
        # details_url ends in systems/<results folder>.json: the one column naming the folder, not the system.
        system = str(record.get("details_url", "")).rsplit("/", 1)[-1].removesuffix(".json")
        rows.append(SummaryRow(system, record.get("division", ""), record.get(f"{BENCHMARK}:time_to_train"),
                               record.get(f"{BENCHMARK}:samples_to_converge"),
                               record.get(f"{BENCHMARK}:RCP") or "", record.get(f"{BENCHMARK}:rcp_scaling_factor")))
    return tuple(rows)


@dataclass(frozen=True)
class RcpReference:
    """The reference convergence point the RCP checker would use for a batch size."""

    batch_size: int
    mean_samples: float  # olympic mean of the reference runs' samples to converge
    min_mean_samples: float  # a submission's olympic mean may not be lower than this
    source: str  # "reference", "interpolated" or "smallest reference" (below the smallest batch size)
    # The hyperparameters of the reference point(s) it comes from, by batch size (two for an interpolated one), as
    # the installed mlperf-logging's rcps_bert.json for the ruleset gives them.
    hyperparameters: dict[int, dict] = field(default_factory=dict)


def rcp_batch_sizes(ruleset: str = DEFAULT_RULESET) -> list[int]:
    """The batch sizes of the reference points the RCP checker uses (after its pruning)."""
    return pruned_batch_sizes(require_ruleset(ruleset))


def rcp_reference(batch_size: int, ruleset: str = DEFAULT_RULESET) -> RcpReference | None:
    """The point the RCP checker compares a batch size against (bert.rcp.checker_choice); None above the largest."""
    choice = checker_choice(batch_size, require_ruleset(ruleset))
    if choice is None:
        return None
    record = choice.record
    return RcpReference(int(record["BS"]), float(record["RCP Mean"]),
                        float(record["RCP Mean"] / record["Max Speedup"]), choice.how,
                        {int(r["BS"]): dict(r["Hyperparams"]) for r in choice.sources})
