"""`mlperf-bert report DIR -o OUT`: a Markdown report with figures, readable without running anything.

OUT/report.md holds the verdict and the score (from `score`: the check, the package checker and the result
summarizer), then per system its description, a table of the runs and three figures: eval accuracy against
samples with the 0.720 target and the reference convergence mean for the batch size, the run times with the
olympic window, and the training throughput between evals. OUT is written beside itself and renamed into
place; an existing OUT is replaced only when all it holds is an earlier report (its report.md and the figures
that report.md shows), so that no other file is ever deleted.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from statistics import median

from rich.console import Console

from bert.mlperf_rules import DEFAULT_RULESET
from compliance import plots
from compliance.check import Progress, TargetError, find_package
from compliance.checkers import rcp_reference
from compliance.errors import InputError
from compliance.folders import build_in_place
from compliance.precheck import shared_batch_size
from compliance.render import print_problems
from compliance.result_log import ResultLog
from compliance.score import ScoreReport, SystemScore, score

REPORT = "report.md"
FIGURE = re.compile(r"!\[[^\]]*\]\(([^)/]+)\)")  # a figure shown by report.md, a file beside it
DESCRIPTION = ("system_name", "division", "status", "number_of_nodes", "accelerators_per_node",
               "accelerator_model_name", "host_processor_model_name", "framework")


class ReportError(InputError):
    pass


@dataclass(frozen=True)
class ReportResult:
    path: Path
    figures: tuple[Path, ...]
    score: ScoreReport


def _number(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _header(org: Path, result: ScoreReport) -> list[str]:
    verdict = "PASS" if result.passed else "FAIL"
    problems = io.StringIO()
    print_problems(result.check, Console(file=problems, width=110, color_system=None))
    written = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return [f"# MLPerf Training BERT submission: {org.name}", "",
            f"Package `{org.resolve()}`, ruleset {result.check.ruleset}, checked with mlperf-logging "
            f"{version('mlperf-logging')} and written {written} by `mlperf-bert report`.", "",
            f"## Verdict: {verdict}", "",
            "What the plain-words checks and the official tools said:", "", "```text",
            problems.getvalue().rstrip() or "no problems", "```", ""]


def _score_table(s: SystemScore | None) -> list[str]:
    if s is None:
        return ["No official score: the tools were not run on this package (see the verdict).", ""]
    samples = _number(s.samples_to_converge) + (" (from the logs)" if s.samples_source == "logs" else "")
    return ["| score (minutes) | samples to converge | RCP | RCP scaling factor | runs |", "|---:|---:|---|---:|---:|",
            f"| {_number(s.minutes, 4)} | {samples} | {s.rcp} | {_number(s.scaling_factor, 4)} | {s.runs} |", ""]


def _rcp_text(logs: list[ResultLog], ruleset: str) -> tuple[float | None, str]:
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


def _runs_table(logs: list[ResultLog]) -> list[str]:
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


def _system_section(name: str, result: ScoreReport, out: Path) -> tuple[list[str], list[Path]]:
    logs = result.check.logs_of(name)  # as the check read them: each log is read once
    desc = result.check.descriptions.get(name, {})
    rcp_mean, rcp_sentence = _rcp_text(logs, result.check.ruleset)
    timed = [log for log in logs if log.run_minutes is not None]
    rcp_label = f"reference convergence mean, {rcp_mean:,.0f} samples" if rcp_mean is not None else ""
    figures = [plots.accuracy_plot(logs, rcp_mean, rcp_label, out / f"{name}_accuracy.png"),
               plots.run_times_plot([log.path.stem for log in timed], [log.run_minutes for log in timed],
                                    out / f"{name}_run_times.png"),
               plots.throughput_plot(logs, out / f"{name}_throughput.png")]
    lines = [f"## System `{name}`", "", *(f"- {key}: {desc.get(key, '-')}" for key in DESCRIPTION), "",
             *_score_table(next((s for s in result.systems if s.system == name), None)),
             "### Runs", "", *_runs_table(logs), rcp_sentence, "",
             f"![Eval accuracy against training samples]({figures[0].name})", "",
             "Masked-LM eval accuracy of every run against the training samples seen, with the target the runs "
             f"logged, {plots.logged_target(logs):.3f} (dashed), and the reference convergence mean where one exists "
             "(dotted); runs "
             "far below the target get a second, zoomed panel.", "",
             f"![Run times]({figures[1].name})", "",
             "Run times from run_start to run_stop, fastest first; the grey runs (fastest and slowest) are dropped "
             "and the shaded window is averaged into the score.", "",
             f"![Training throughput]({figures[2].name})", "",
             "Training samples per second of each block, from block_start to the next eval_start (eval time "
             "excluded).", ""]
    return lines, figures


def _earlier_report(out: Path) -> set[str]:
    """The names an earlier report wrote into `out`: its report.md and the figures it shows (none without one)."""
    try:
        return {REPORT, *FIGURE.findall((out / REPORT).read_text(errors="replace"))}
    except OSError:
        return set()


def _check_out(out: Path) -> None:
    """Refuses an OUT that replacing would lose anything of: a file, or a folder with more than an earlier report."""
    if out.exists() and not out.is_dir():
        raise ReportError(f"{out} is a file; choose a folder for -o")
    if not out.exists():
        return
    others = sorted(p.name for p in out.iterdir() if p.name not in _earlier_report(out))
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise ReportError(f"{out} holds {shown}, which no earlier report wrote; a report replaces only an earlier "
                          "report: choose another -o folder, or move those files away")


def write_report(path: str | Path, out: str | Path, ruleset: str = DEFAULT_RULESET,
                 progress: Progress | None = None) -> ReportResult:
    org, out = find_package(Path(path)), Path(out)
    if org is None:
        raise TargetError(f"{path}: not a submission (ORG/systems/<name>.json and ORG/results/<name>/bert/)")
    _check_out(out)
    result = score(org, ruleset, progress)
    figures: list[Path] = []

    def build(staging: Path) -> None:
        lines = _header(org, result)
        for name in sorted({row.label.split("/", 1)[0] for row in result.check.rows}):
            if progress is not None:
                progress(f"figures: {name}")
            section, drawn = _system_section(name, result, staging)
            lines += section
            figures.extend(out / f.name for f in drawn)
        (staging / REPORT).write_text("\n".join(lines))
        _check_out(out)  # again, just before OUT is replaced: files may have arrived while the tools ran

    build_in_place(out, build)
    return ReportResult(out / REPORT, tuple(figures), result)
