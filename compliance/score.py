"""`mlperf-bert score PATH`: the official score of each BERT system of a submission (or of every submission of a
folder of them), and whether it stands.

The submission is checked (`check`), and in the same pass the package checker runs on the copies of each system
the tools can read (writing the scaling.json of a closed-division RCP that passes faster than the reference
mean), then the result summarizer on those same copies: each tool runs once (and not again when `check` already
ran the package checker on the same files: compliance.tool_cache). The score of every system the summarizer
scores is shown, and stands only when the whole check passes. The result summarizer reports samples to converge
only for the closed division; for the open division they come from the logs, counted the way the RCP checker
counts them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from bert.mlperf_rules import DEFAULT_RULESET
from compliance.check import CheckReport, Progress, TargetError, check_tree
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


@dataclass(frozen=True)
class TreeScore:
    """The scores of everything at PATH: one ScoreReport per submission."""

    target: Path
    reports: tuple[ScoreReport, ...]
    skipped: tuple[str, ...]  # submissions at PATH without BERT results

    @property
    def passed(self) -> bool:
        return bool(self.reports) and all(report.passed for report in self.reports)


def score_of(report: CheckReport) -> ScoreReport:
    """The ScoreReport of a submission checked with `score`."""
    if report.scoring is None:
        return ScoreReport(report, None, ())
    systems = tuple(_system_score(row, report.logs_of(row.system)) for row in report.scoring.rows)
    return ScoreReport(report, report.scoring, systems)


def score_tree(path: str | Path, ruleset: str = DEFAULT_RULESET, progress: Progress | None = None,
               systems: list[str] | None = None) -> TreeScore:
    """Checks and scores every submission at PATH (an ORG folder, or a folder of them); `systems` picks systems."""
    tree = check_tree(Path(path), ruleset, progress=progress, score=True, systems=systems)
    return TreeScore(tree.target, tuple(score_of(report) for report in tree.reports), tuple(tree.skipped))


def score(path: str | Path, ruleset: str = DEFAULT_RULESET, progress: Progress | None = None,
          systems: list[str] | None = None) -> ScoreReport:
    """Checks and scores the one submission at PATH (ORG, or a folder holding one ORG)."""
    tree = score_tree(path, ruleset, progress, systems)
    if len(tree.reports) != 1:
        names = ", ".join(report.check.target.name for report in tree.reports)
        raise TargetError(f"{path}: holds {len(tree.reports)} submissions with BERT results ({names}); score them "
                          "together with score_tree")
    return tree.reports[0]
