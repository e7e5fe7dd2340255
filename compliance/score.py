"""`mlperf-bert score DIR`: the official score of a submission, and whether it stands.

The submission is checked (`check`), and in the same pass the package checker runs on a copy of the systems the
tools can read (writing the scaling.json of a closed-division RCP that passes faster than the reference mean),
then the result summarizer on that same copy: each tool runs once. The score of every system the summarizer
scores is shown, and stands only when the whole check passes. The result summarizer reports samples to converge
only for the closed division; for the open division they come from the logs, counted the way the RCP checker
counts them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from bert.mlperf_rules import DEFAULT_RULESET
from compliance.check import CheckReport, Progress, TargetError, check, find_package
from compliance.checkers import Scoring, SummaryRow
from compliance.result_log import ResultLog, olympic_mean


@dataclass(frozen=True)
class SystemScore:
    system: str
    division: str
    minutes: float | None  # the result summarizer's score, scaled by the RCP factor; None: no valid score
    samples_to_converge: float | None
    samples_source: str  # "result summarizer" or "logs"
    rcp: str
    scaling_factor: float | None
    runs: int


@dataclass(frozen=True)
class ScoreReport:
    check: CheckReport
    scoring: Scoring | None  # None: not run, the tools can read no system of the package
    systems: tuple[SystemScore, ...]

    @property
    def passed(self) -> bool:
        return (self.check.passed and self.scoring is not None and self.scoring.package.passed
                and bool(self.systems) and all(s.minutes is not None for s in self.systems))


def samples_to_converge(logs: list[ResultLog]) -> float | None:
    """The olympic mean of the runs' samples to converge (a run that did not converge counts as infinite)."""
    samples = [log.samples_to_converge if log.samples_to_converge is not None else math.inf for log in logs]
    if len(samples) < 3 or sum(math.isinf(s) for s in samples) > 1:
        return None
    return olympic_mean(samples)


def _system_score(row: SummaryRow, logs: list[ResultLog]) -> SystemScore:
    if row.samples_to_converge is not None:
        samples, source = row.samples_to_converge, "result summarizer"
    else:
        samples, source = samples_to_converge(logs), "logs"
    rcp = row.rcp or ("n/a (open division)" if row.division == "open" else "-")
    return SystemScore(row.system, row.division, row.minutes, samples, source, rcp, row.scaling_factor, len(logs))


def score(path: str | Path, ruleset: str = DEFAULT_RULESET, progress: Progress | None = None) -> ScoreReport:
    """Checks and scores the submission at PATH (ORG, or a folder holding one ORG)."""
    org = find_package(Path(path))
    if org is None:
        raise TargetError(f"{path}: not a submission (ORG/systems/<name>.json and ORG/results/<name>/bert/)")
    report = check(org, ruleset, progress=progress, score=True)
    if report.scoring is None:
        return ScoreReport(report, None, ())
    systems = tuple(_system_score(row, report.logs_of(row.system)) for row in report.scoring.rows)
    return ScoreReport(report, report.scoring, systems)
