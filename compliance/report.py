"""`mlperf-bert report PATH -o OUT`: a Markdown report with figures, readable without running anything.

OUT/report.md holds, for each submission at PATH (an ORG folder, or a folder of them), the verdict and the score
(from `score`: the check, the package checker and the result summarizer), then per BERT system its description,
a table of the runs and three figures: eval accuracy against samples with the 0.720 target and the reference
convergence mean for the batch size (zoomed near the target), the run times with the olympic window, and the
training throughput between evals.

OUT is claimed as bert.ownership claims an output folder: the report removes and replaces only what a report
wrote there before (its record says which files), never a file of someone else's, and refuses a folder that holds
one; everything is drawn aside first, so OUT changes only once the report is whole.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from statistics import median

from rich.console import Console

from bert.mlperf_rules import DEFAULT_RULESET
from bert.ownership import claim_folder, temporary_path
from compliance import plots
from compliance.check import Progress
from compliance.checkers import rcp_reference
from compliance.folder_rules import shared_batch_size
from compliance.render import print_problems
from compliance.result_log import ResultLog
from compliance.score import ScoreReport, SystemScore, TreeScore, score_tree

REPORT = "report.md"
WRITER = "report"
DESCRIPTION = ("system_name", "division", "status", "number_of_nodes", "accelerators_per_node",
               "accelerator_model_name", "host_processor_model_name", "framework")


@dataclass(frozen=True)
class ReportResult:
    path: Path
    figures: tuple[Path, ...]
    scores: TreeScore


def _number(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def file_stem(*names: str) -> str:
    """A file name for figures of a submission's system: its names joined, anything but letters, digits and
    `.+-` made `_` (a name from a submission never becomes a path)."""
    return re.sub(r"[^A-Za-z0-9.+-]+", "_", "_".join(names)).strip("._") or "system"


def _header(result: ScoreReport) -> list[str]:
    org = result.check.target
    verdict = "PASS" if result.passed else "FAIL"
    problems = io.StringIO()
    print_problems(result.check, Console(file=problems, width=110, color_system=None))
    skipped = ([f"Skipped (no BERT results): {', '.join(result.check.skipped)}.", ""]
               if result.check.skipped else [])
    return [f"# MLPerf Training BERT submission: {org.name}", "",
            f"Package `{org.resolve()}`, ruleset {result.check.ruleset}.", "", *skipped,
            f"## Verdict: {verdict}", "",
            "What the plain-words checks and the official tools said:", "", "```text",
            problems.getvalue().rstrip() or "no problems", "```", ""]


def _score_table(s: SystemScore | None) -> list[str]:
    if s is None:
        return ["No official score: the tools were not run on this system (see the verdict).", ""]
    samples = _number(s.samples_to_converge) + (" (from the logs)" if s.samples_source == "logs" else "")
    return ["| score (minutes) | samples to converge | RCP | RCP scaling factor | runs |", "|---:|---:|---|---:|---:|",
            f"| {_number(s.minutes, 4)} | {samples} | {s.rcp} | {_number(s.scaling_factor, 4)} | {s.runs} |", ""]


def rcp_text(logs: list[ResultLog], ruleset: str) -> tuple[float | None, str]:
    """The reference mean to draw (None when there is none for this batch size) and a sentence about it."""
    batch = shared_batch_size(logs)
    if batch is None:
        return None, "The runs do not share one logged global batch size, so no reference convergence point applies."
    ref = rcp_reference(batch, ruleset)
    if ref is None:
        return None, f"No reference convergence point covers global batch size {batch} (ruleset {ruleset})."
    if ref.source == "smallest reference":
        return None, (f"Global batch size {batch} is below the smallest reference point ({ref.batch_size}, mean "
                      f"{ref.mean_samples:,.0f} samples); the RCP checker compares closed-division runs with it.")
    return ref.mean_samples, (f"Reference convergence point for global batch size {batch} ({ref.source}): mean "
                              f"{ref.mean_samples:,.0f} samples; a closed-division olympic mean may not be below "
                              f"{ref.min_mean_samples:,.0f}.")


def runs_table(logs: list[ResultLog]) -> list[str]:
    timed = sorted((log.run_minutes, log.path.name) for log in logs if log.run_minutes is not None)
    outside = {timed[0][1], timed[-1][1]} if len(timed) >= 3 else set()
    lines = ["| run | seed | status | samples to converge | minutes | best accuracy | median samples/s | "
             "olympic window |", "|---|---:|---|---:|---:|---:|---:|---|"]
    for log in logs:
        best = max((e.accuracy for e in log.evals), default=None)
        rates = [p.samples_per_second for p in log.throughput()]
        window = "-" if log.run_minutes is None else ("dropped" if log.path.name in outside else "scored")
        lines.append(f"| {log.path.name} | {log.seed} | {log.status or 'no run_stop'} | "
                     f"{_number(log.samples_to_converge)} | {_number(log.run_minutes, 4)} | {_number(best, 4)} | "
                     f"{_number(median(rates) if rates else None, 1)} | {window} |")
    return lines + [""]


def system_figures(logs: list[ResultLog], ruleset: str, folder: Path, stem: str) -> list[Path]:
    """The three figures of one system's runs, written into `folder` as <stem>_accuracy.png, _run_times.png and
    _throughput.png."""
    rcp_mean, _ = rcp_text(logs, ruleset)
    timed = [log for log in logs if log.run_minutes is not None]
    rcp_label = f"reference convergence mean, {rcp_mean:,.0f} samples" if rcp_mean is not None else ""
    return [plots.accuracy_plot(logs, rcp_mean, rcp_label, folder / f"{stem}_accuracy.png"),
            plots.run_times_plot([log.path.stem for log in timed], [log.run_minutes for log in timed],
                                 folder / f"{stem}_run_times.png"),
            plots.throughput_plot(logs, folder / f"{stem}_throughput.png")]


def _system_section(name: str, result: ScoreReport, folder: Path, stem: str) -> tuple[list[str], list[Path]]:
    logs = result.check.logs_of(name)  # as the check read them: each log is read once
    desc = result.check.descriptions.get(name, {})
    figures = system_figures(logs, result.check.ruleset, folder, stem)
    lines = [f"## System `{name}`", "", *(f"- {key}: {desc.get(key, '-')}" for key in DESCRIPTION), "",
             *_score_table(next((s for s in result.systems if s.system == name), None)),
             "### Runs", "", *runs_table(logs), rcp_text(logs, result.check.ruleset)[1], "",
             f"![Eval accuracy against training samples]({figures[0].name})", "",
             "Masked-LM eval accuracy of every run against the training samples seen, with the target the runs "
             f"logged, {plots.logged_target(logs):.3f} (dashed), and the reference convergence mean where one exists "
             "(dotted); the upper panel is zoomed where the runs end (near the target), the lower one shows the "
             "whole climb.", "",
             f"![Run times]({figures[1].name})", "",
             "Run times from run_start to run_stop, fastest first; the grey runs (fastest and slowest) are dropped "
             "and the shaded window is averaged into the score.", "",
             f"![Training throughput]({figures[2].name})", "",
             "Training samples per second of each block, from block_start to the next eval_start (eval time "
             "excluded).", ""]
    return lines, figures


def publish(drawn: Path, out: Path, writer: str, inputs: list[Path]) -> list[Path]:
    """Moves the files drawn aside into OUT, claimed for `writer` (bert.ownership): what that writer wrote there
    before is removed first, anything else refuses the claim before anything changes. Returns OUT's files."""
    names = sorted(p.name for p in drawn.iterdir())
    with claim_folder(out, writer, inputs, mode="overwrite",
                      foreign_hint="choose another -o folder, or move those files away") as folder:
        folder.record(*names)
        for name in names:
            partial = temporary_path(out / name)
            shutil.copyfile(drawn / name, partial)
            os.replace(partial, out / name)
    return [out / name for name in names]


def write_report(path: str | Path, out: str | Path, ruleset: str = DEFAULT_RULESET,
                 progress: Progress | None = None, systems: list[str] | None = None) -> ReportResult:
    path, out, progress = Path(path), Path(out), progress or Progress()
    plots.require()
    scores = score_tree(path, ruleset, progress, systems)
    several = len(scores.reports) > 1
    with tempfile.TemporaryDirectory(prefix="mlperf-report-") as scratch:
        drawn = Path(scratch)
        progress.step("figures", sum(len(r.check.systems) for r in scores.reports))
        written = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        lines = [f"Checked with mlperf-logging {version('mlperf-logging')}, written {written} by `mlperf-bert "
                 f"report`.", ""]
        if scores.skipped:
            lines += [f"Submissions without BERT results: {', '.join(scores.skipped)}.", ""]
        for result in scores.reports:
            lines += _header(result)
            for name in sorted({row.label.split("/", 1)[0] for row in result.check.rows}):
                stem = file_stem(result.check.target.name, name) if several else file_stem(name)
                section, _ = _system_section(name, result, drawn, stem)
                lines += section
                progress.advance()
        (drawn / REPORT).write_text("\n".join(lines))
        files = publish(drawn, out, WRITER, [path])
    return ReportResult(out / REPORT, tuple(f for f in files if f.suffix == ".png"), scores)
