"""The official mlperf-logging checkers, run as the reviewers run them, with their real verdict.

`compliance_check(log)`, `rcp_check(folder)`, `system_desc_check(json)`, `package_check(org_dir)` return a
`CheckResult` (passed, the tool's output); `score_package(org_dir)` the result summarizer's `Scoring`;
`rcp_batch_sizes` and `rcp_reference` the RCP checker's reference points. The ruleset is always given
(`require_ruleset` refuses one that does not know BERT). Each tool runs in a subprocess in a scratch directory,
the package checker and the summarizer on a copy of the systems they check. How each tool is run, what each one
does and where its exit code cannot be trusted: docs/submission.md, "How the official tools are run".
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bert.mlperf_rules import BENCHMARK, DEFAULT_RULESET, RULESETS
from compliance.errors import UsageError
from compliance.files import MAX_LOG_BYTES, UnreadableFile, read_regular_file

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


def _systems_of(org_dir: Path) -> list[str]:
    found = {p.stem for p in (org_dir / "systems").glob("*.json")}
    return sorted(found | {p.name for p in (org_dir / "results").glob("*") if p.is_dir()})


def _copy_for_tools(org_dir: Path, scratch: Path, systems: list[str] | None) -> Path:
    """A copy of the systems the tools are to check (default: all): their JSON and the regular files under
    their results folders; a file that is no regular file or too large (compliance.files) is left out."""
    copy = scratch / org_dir.name
    for name in _systems_of(org_dir) if systems is None else systems:
        results = org_dir / "results" / name
        sources = [org_dir / "systems" / f"{name}.json"]
        sources += sorted(p for p in results.rglob("*") if not p.is_dir()) if results.is_dir() else []
        for source in sources:
            try:
                data = read_regular_file(source, MAX_LOG_BYTES)
            except UnreadableFile:
                continue
            target = copy / source.relative_to(org_dir)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    return copy


def _package_check_in(copy: Path, org_dir: Path, ruleset: str) -> CheckResult:
    output, _ = _run(["mlperf_logging.package_checker", str(copy), USAGE, ruleset], copy.parent)
    return CheckResult("package checker", str(org_dir), PACKAGE_SUCCESS in output,
                       output.replace(str(copy), str(org_dir)))


def package_check(org_dir: str | Path, ruleset: str = DEFAULT_RULESET, systems: list[str] | None = None) -> CheckResult:
    """`python -m mlperf_logging.package_checker ORG_DIR training R` on `systems` (default: all); success is its
    success line, not its exit code (always 0)."""
    org_dir = Path(org_dir).resolve()
    with tempfile.TemporaryDirectory(prefix="mlperf-package-") as scratch:
        return _package_check_in(_copy_for_tools(org_dir, Path(scratch), systems), org_dir, require_ruleset(ruleset))


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


def _summary_rows(summary: Path) -> tuple[SummaryRow, ...]:
    if not summary.is_file():
        return ()
    rows = []
    for record in json.loads(summary.read_text()):
        # details_url ends in systems/<results folder>.json: the one column naming the folder, not the system.
        system = record.get("details_url", "").rsplit("/", 1)[-1].removesuffix(".json")
        rows.append(SummaryRow(system, record.get("division", ""), record.get(f"{BENCHMARK}:time_to_train"),
                               record.get(f"{BENCHMARK}:samples_to_converge"),
                               record.get(f"{BENCHMARK}:RCP") or "", record.get(f"{BENCHMARK}:rcp_scaling_factor")))
    return tuple(rows)


def score_package(org_dir: str | Path, ruleset: str = DEFAULT_RULESET, systems: list[str] | None = None) -> Scoring:
    """The package checker (which writes scaling.json), then the result summarizer, on one copy of `systems`
    (default: all) of the tree."""
    org_dir, ruleset = Path(org_dir).resolve(), require_ruleset(ruleset)
    with tempfile.TemporaryDirectory(prefix="mlperf-score-") as scratch:
        copy = _copy_for_tools(org_dir, Path(scratch), systems)
        package = _package_check_in(copy, org_dir, ruleset)
        output, _ = _run(["mlperf_logging.result_summarizer", str(copy), USAGE, ruleset, "--csv", "summary.csv"],
                         copy.parent)
        rows = _summary_rows(copy.parent / "summary_detailed.json")
    return Scoring(package, output.replace(str(copy), str(org_dir)), rows)


@dataclass(frozen=True)
class RcpReference:
    """The reference convergence point the RCP checker would use for a batch size."""

    batch_size: int
    mean_samples: float  # olympic mean of the reference runs' samples to converge
    min_mean_samples: float  # a submission's olympic mean may not be lower than this
    source: str  # "reference", "interpolated" or "smallest reference" (below the smallest batch size)


def _rcp_checker(ruleset: str):
    from mlperf_logging.rcp_checker.rcp_checker import RCP_Checker

    return RCP_Checker(USAGE, require_ruleset(ruleset), BENCHMARK, verbose=False)


def rcp_batch_sizes(ruleset: str = DEFAULT_RULESET) -> list[int]:
    """The batch sizes of the reference points the RCP checker uses (after its pruning)."""
    return sorted(r["BS"] for r in _rcp_checker(ruleset).pruned_rcp_data.values())


def rcp_reference(batch_size: int, ruleset: str = DEFAULT_RULESET) -> RcpReference | None:
    """The point the RCP checker compares a batch size against, chosen as it chooses; None above the largest."""
    checker, pruned = _rcp_checker(ruleset), "pruned_rcps"
    record, source = checker._find_rcp(batch_size, pruned), "reference"
    if record is None:
        low = checker._find_top_min_rcp(batch_size, pruned)
        high = checker._find_bottom_max_rcp(batch_size, pruned)
        if low is not None and high is not None:
            _, record = checker._create_interp_rcp(batch_size, low, high)
            source = "interpolated"
        elif low is None and high is not None:
            record, source = checker._find_min_rcp(pruned), "smallest reference"
    if record is None:
        return None
    return RcpReference(int(record["BS"]), float(record["RCP Mean"]),
                        float(record["RCP Mean"] / record["Max Speedup"]), source)
