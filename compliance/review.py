"""`mlperf-bert review PATH -o OUT`: one table across every BERT system at PATH (a submission, or a folder of them:
a whole round), for a reviewer comparing submitters.

Each system's row holds what `score` established: the official verdict (the package checker on that system) and
score (the result summarizer), our own verdict and findings, the RCP verdict and its margin (how far the olympic
mean of samples to converge lies above the least the RCP checker accepts), the accelerators (systems/<name>.json)
and the figures per accelerator (accelerator-minutes, samples per second per accelerator from run_start to
run_stop), and the logged hyperparameters beside those of the reference convergence point they are judged
against (rcps_bert.json of the installed mlperf-logging, for the ruleset). OUT gets review.md, review.csv and
review.json, the leaderboard (minutes against accelerators) and each system's figures of `report`; it is claimed
as `report` claims its folder (bert.ownership).
"""

from __future__ import annotations

import csv
import io
import json
import math
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import median

from mlperf_logging.mllog import constants as C

from bert.mlperf_rules import DEFAULT_RULESET
from compliance import plots
from compliance.check import Progress
from compliance.checkers import rcp_reference
from compliance.findings import ERROR
from compliance.folder_rules import shared_batch_size
from compliance.report import file_stem, publish, system_figures
from compliance.score import ScoreReport, TreeScore, score_tree

WRITER = "review"
LOG_KEY = {"opt_epsilon": C.OPT_LAMB_EPSILON}  # the RCP files' name for a key the logs name otherwise


@dataclass(frozen=True)
class ReviewRow:
    org: str
    system: str
    division: str
    accelerator: str  # accelerator_model_name
    accelerators: int | None  # number_of_nodes x accelerators_per_node
    official: str  # the package checker on this system: PASS, FAIL or NOT RUN
    minutes: float | None  # the result summarizer's score
    ours: str  # this harness's verdict: PASS or FAIL
    errors: int
    warnings: int
    first_error: str
    rcp: str  # the result summarizer's RCP column ("Pass", "Fail", ...), n/a for the open division
    rcp_margin_percent: float | None  # olympic mean of samples to converge over the least accepted, minus 1
    scaling_factor: float | None
    samples_to_converge: float | None
    accelerator_minutes: float | None
    samples_per_second_per_accelerator: float | None
    global_batch_size: int | None
    rcp_batch_sizes: tuple[int, ...] = ()  # the reference point(s) the RCP is taken from
    rcp_source: str = ""
    hyperparameters: dict[str, dict] = field(default_factory=dict)  # key: {"logged": v, "rcp": [v, ...]}


def _whole(value: object) -> int | None:
    try:
        number = int(str(value).strip())
    except ValueError:
        return None
    return number if number >= 0 else None


def _accelerators(description: dict) -> int | None:
    nodes, per_node = _whole(description.get("number_of_nodes")), _whole(description.get("accelerators_per_node"))
    return nodes * per_node if nodes is not None and per_node is not None else None


def _rate(logs: list) -> float | None:
    """Median over the converged runs of samples to converge per second from run_start to run_stop."""
    rates = [log.samples_to_converge / (log.run_minutes * 60) for log in logs
             if log.samples_to_converge is not None and log.run_minutes]
    return median(rates) if rates else None


def _hyperparameters(logs: list, reference) -> dict[str, dict]:
    if reference is None or not logs:
        return {}
    keys = dict.fromkeys(key for hp in reference.hyperparameters.values() for key in hp)
    return {key: {"logged": logs[0].value(LOG_KEY.get(key, key)),
                  "rcp": [hp.get(key) for _, hp in sorted(reference.hyperparameters.items())]} for key in keys}


def _row(result: ScoreReport, name: str) -> ReviewRow:
    check, logs = result.check, result.check.logs_of(name)
    part = check.about(name)
    description = check.descriptions.get(name, {})
    score = next((s for s in result.systems if s.system == name), None)
    package = next((t for t in part.tools if t.tool == "package checker"), None)
    official = "NOT RUN" if package is None or package.result is None else ("PASS" if package.passed else "FAIL")
    errors = [f for f in part.findings + [f for row in part.rows for f in row.findings] if f.level == ERROR]
    warnings = [f for f in part.findings + [f for row in part.rows for f in row.findings] if f.level != ERROR]
    accelerators, minutes = _accelerators(description), score.minutes if score is not None else None
    batch = shared_batch_size(logs)
    reference = rcp_reference(batch, check.ruleset) if batch is not None else None
    samples = score.samples_to_converge if score is not None else None
    closed = (score.division if score is not None else description.get("division")) == "closed"
    margin = (samples / reference.min_mean_samples - 1) * 100 if closed and reference and samples else None
    rate = _rate(logs)
    return ReviewRow(
        check.target.name, name, str(description.get("division", "-")),
        str(description.get("accelerator_model_name", "-")), accelerators, official, minutes,
        "PASS" if part.passed else "FAIL", len(errors), len(warnings),
        errors[0].message if errors else "", score.rcp if score is not None else "-", margin,
        score.scaling_factor if score is not None else None, samples,
        minutes * accelerators if minutes is not None and accelerators else None,
        rate / accelerators if rate is not None and accelerators else None, batch,
        tuple(sorted(reference.hyperparameters)) if reference else (), reference.source if reference else "",
        _hyperparameters(logs, reference))


def review_rows(scores: TreeScore) -> list[ReviewRow]:
    """A row per BERT system at PATH, fastest official score first (those without one last)."""
    rows = [_row(result, name) for result in scores.reports for name in result.check.systems]
    return sorted(rows, key=lambda r: (r.minutes is None, r.minutes or 0.0, r.org, r.system))


def _n(value: float | None, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:,.{digits}f}"


def _value(value: object) -> str:
    return "-" if value is None else (f"{value:g}" if isinstance(value, float) else str(value))


RESULT_COLUMNS = ("org", "system", "division", "accelerator", "accelerators", "official", "score (min)", "ours",
                  "errors / warnings", "RCP", "RCP margin", "accelerator-minutes", "samples/s per accelerator")


def _result_cells(r: ReviewRow) -> list[str]:
    margin = "-" if r.rcp_margin_percent is None else f"{r.rcp_margin_percent:+.1f}%"
    return [r.org, r.system, r.division, r.accelerator, _value(r.accelerators), r.official, _n(r.minutes, 4), r.ours,
            f"{r.errors} / {r.warnings}", r.rcp, margin, _n(r.accelerator_minutes, 1),
            _n(r.samples_per_second_per_accelerator, 1)]


def _hyperparameter_cells(r: ReviewRow, keys: list[str]) -> list[str]:
    cells = [f"{r.org}/{r.system}", _value(r.global_batch_size),
             f"{', '.join(map(str, r.rcp_batch_sizes)) or '-'}{f' ({r.rcp_source})' if r.rcp_source else ''}"]
    for key in keys:
        found = r.hyperparameters.get(key)
        cells.append("-" if found is None else f"{_value(found['logged'])} ({' / '.join(map(_value, found['rcp']))})")
    return cells


def markdown(rows: list[ReviewRow], scores: TreeScore, ruleset: str) -> str:
    def table(header: list[str], body: list[list[str]]) -> list[str]:
        def line(cells): return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"
        return [line(header), "|" + "---|" * len(header), *(line(cells) for cells in body), ""]
    keys = list(dict.fromkeys(k for r in rows for k in r.hyperparameters))
    lines = [f"# MLPerf Training BERT review: {scores.target.name}", "",
             f"{len(rows)} BERT systems of {len(scores.reports)} submissions, ruleset {ruleset}; fastest official "
             "score first. Official: the package checker on the system; ours: this harness's verdict (see `mlperf-bert "
             "check`). RCP margin: the olympic mean of samples to converge over the least the RCP checker accepts.",
             "", *([f"Submissions without BERT results: {', '.join(scores.skipped)}.", ""] if scores.skipped else []),
             "![Leaderboard](leaderboard.png)", "", *table(list(RESULT_COLUMNS), [_result_cells(r) for r in rows])]
    failing = [r for r in rows if r.first_error]
    if failing:
        lines += ["## First error of each system that fails our check", "",
                  *(f"- {r.org}/{r.system}: {r.first_error}" for r in failing), ""]
    lines += ["## Hyperparameters logged (the reference convergence point's in brackets)", "",
              *table(["system", "global batch size", "RCP batch size", *keys],
                     [_hyperparameter_cells(r, keys) for r in rows])]
    return "\n".join(lines)


def _csv(rows: list[ReviewRow]) -> str:
    keys = list(dict.fromkeys(k for r in rows for k in r.hyperparameters))
    out = io.StringIO()
    writer = csv.writer(out)
    plain = [f for f in ReviewRow.__dataclass_fields__ if f not in ("hyperparameters", "rcp_batch_sizes")]
    writer.writerow([*plain, "rcp_batch_sizes", *(f"{k} (logged)" for k in keys), *(f"{k} (rcp)" for k in keys)])
    for r in rows:
        values = asdict(r)
        hp = r.hyperparameters
        writer.writerow([*(values[f] for f in plain), " ".join(map(str, r.rcp_batch_sizes)),
                         *(hp.get(k, {}).get("logged") for k in keys),
                         *(" / ".join(map(str, hp.get(k, {}).get("rcp", []))) for k in keys)])
    return out.getvalue()


def _finite(value):
    """JSON data with every number that is no finite number (a log's NaN) made null: standard JSON has none."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_finite(v) for v in value]
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class ReviewResult:
    files: tuple[Path, ...]
    rows: tuple[ReviewRow, ...]
    scores: TreeScore

    @property
    def passed(self) -> bool:
        return self.scores.passed


def _draw(rows: list[ReviewRow], scores: TreeScore, folder: Path, progress: Progress) -> None:
    points = [(f"{r.org}/{r.system}", r.accelerators, r.minutes, r.accelerator, r.division) for r in rows
              if r.minutes is not None and r.accelerators]
    plots.leaderboard_plot(points, folder / "leaderboard.png")
    for result in scores.reports:
        for name in result.check.systems:
            logs = result.check.logs_of(name)
            if logs:
                system_figures(logs, result.check.ruleset, folder, file_stem(result.check.target.name, name))
            progress.advance()


def write_review(path: str | Path, out: str | Path, ruleset: str = DEFAULT_RULESET, progress: Progress | None = None,
                 systems: list[str] | None = None) -> ReviewResult:
    """Scores everything at PATH and writes the review into OUT."""
    path, out, progress = Path(path), Path(out), progress or Progress()
    plots.require()
    scores = score_tree(path, ruleset, progress, systems)
    rows = review_rows(scores)
    with tempfile.TemporaryDirectory(prefix="mlperf-review-") as scratch:
        drawn = Path(scratch)
        (drawn / "review.md").write_text(markdown(rows, scores, ruleset))
        (drawn / "review.csv").write_text(_csv(rows))
        (drawn / "review.json").write_text(json.dumps(_finite([asdict(r) for r in rows]), indent=1) + "\n")
        progress.step("figures", len(rows))
        _draw(rows, scores, drawn, progress)
        files = publish(drawn, out, WRITER, [path])
    return ReviewResult(tuple(files), tuple(rows), scores)
