"""The report's and the review's figures (matplotlib, Agg backend: no display needed), one PNG each."""

from __future__ import annotations

from pathlib import Path

from bert.mllog import TARGET_ACCURACY
from bert.mlperf_rules import MLPERF_TARGET_ACCURACY as MLPERF_TARGET
from compliance.errors import InputError
from compliance.result_log import ResultLog


class PlotError(InputError):
    pass


HARNESS_ROOT = Path(__file__).resolve().parent.parent
# The command that installs what the figures need: the bootstrap's `report` extra (setup.cfg), into the harness's
# own environment (or the Python MLPERF_BERT_SYSTEM_PYTHON names).
INSTALL_REPORT = f"source {HARNESS_ROOT / 'bootstrap.sh'} report"
ZOOM_BELOW_TARGET = 0.08  # the zoomed panel shows accuracies from this far below the target up


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise PlotError(f"the figures need matplotlib, which this Python lacks: run `{INSTALL_REPORT}` (the harness's "
                        "report extra), or `pip install matplotlib`, then run the command again") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def require() -> None:
    """PlotError now, before any long work, when the figures could not be drawn at its end."""
    _pyplot()


def _save(plt, fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _accuracy_axes(ax, logs: list[ResultLog], rcp_mean: float | None, rcp_label: str, bottom: float, top: float,
                   target: float) -> None:
    for log in logs:
        evals = log.evals
        ax.plot([e.samples for e in evals], [e.accuracy for e in evals], marker=".", linewidth=1,
                label=f"{log.path.stem} (seed {log.seed})")
    if bottom < target < top:
        ax.axhline(target, color="black", linestyle="--", linewidth=1,
                   label=f"{'MLPerf target' if target == MLPERF_TARGET else 'target'} {target:.3f}")
    if rcp_mean is not None:
        ax.axvline(rcp_mean, color="tab:red", linestyle=":", linewidth=1.5, label=rcp_label)
    ax.set_xlabel("training samples")
    ax.set_ylabel("masked-LM eval accuracy")
    ax.set_ylim(bottom, top)
    ax.grid(alpha=0.3)


def logged_target(logs: list[ResultLog]) -> float:
    """The target the runs logged (target_accuracy), when they all log the same one; else MLPerf's 0.720."""
    targets = [log.value(TARGET_ACCURACY) for log in logs]
    target = targets[0] if targets and all(t == targets[0] for t in targets) else None
    number = isinstance(target, (int, float)) and not isinstance(target, bool)
    return target if number and 0 < target < 1 else MLPERF_TARGET


def accuracy_plot(logs: list[ResultLog], rcp_mean: float | None, rcp_label: str, path: Path) -> Path:
    """Eval accuracy against training samples for every run, the target they logged (logged_target) and the
    RCP mean. The first panel is zoomed where it matters: near the target for runs that reach it (on a 0-1 axis
    the last evals, a few thousandths apart, are one line), or to the runs' own accuracy for runs that stay far
    below it; the second shows the whole climb."""
    plt = _pyplot()
    target = logged_target(logs)
    best = max((e.accuracy for log in logs for e in log.evals), default=0.0)
    near = best >= target / 2
    fig, axes = plt.subplots(2, 1, figsize=(8, 8), squeeze=False, gridspec_kw={"height_ratios": [3, 2]})
    if near:
        low, high = max(0.0, target - ZOOM_BELOW_TARGET), min(1.0, max(best, target) + 0.01)
        title = f"zoomed near the target ({low:.3f} to {high:.3f}); below: the whole climb"
    else:
        low, high = 0.0, best * 1.1 if best > 0 else 1.0
        title = "zoomed to the runs' accuracy (the target is off the scale); below: on the 0-1 scale"
    _accuracy_axes(axes[0][0], logs, rcp_mean, rcp_label, low, high, target)
    axes[0][0].set_title(title, fontsize=9)
    axes[0][0].legend(fontsize=7, ncol=2, loc="best")
    _accuracy_axes(axes[1][0], logs, rcp_mean, rcp_label, 0.0, 1.0, target)
    return _save(plt, fig, path)


def run_times_plot(labels: list[str], minutes: list[float], path: Path) -> Path:
    """Run times, fastest to slowest; the olympic window (all but the fastest and the slowest) shaded."""
    plt = _pyplot()
    order = sorted(range(len(minutes)), key=lambda i: minutes[i])
    fig, ax = plt.subplots(figsize=(8, 4))
    colors = ["tab:gray" if rank in (0, len(order) - 1) else "tab:blue" for rank in range(len(order))]
    ax.bar(range(len(order)), [minutes[i] for i in order], color=colors)
    ax.set_xticks(range(len(order)), [labels[i] for i in order], rotation=45, ha="right", fontsize=8)
    if len(order) >= 3:
        ax.axvspan(0.5, len(order) - 1.5, color="tab:blue", alpha=0.08, label="olympic window (scored runs)")
        window = [minutes[i] for i in order[1:-1]]
        ax.axhline(sum(window) / len(window), color="black", linestyle="--", linewidth=1,
                   label=f"olympic mean {sum(window) / len(window):.4f} min")
        ax.legend(fontsize=8)
    ax.set_ylabel("run time, run_start to run_stop (minutes)")
    ax.grid(axis="y", alpha=0.3)
    return _save(plt, fig, path)


def throughput_plot(logs: list[ResultLog], path: Path) -> Path:
    """Training samples per second of each block between evals, for every run."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    for log in logs:
        points = log.throughput()
        ax.plot([p.samples for p in points], [p.samples_per_second for p in points], marker=".", linewidth=1,
                label=log.path.stem)
    ax.set_xlabel("training samples")
    ax.set_ylabel("training samples / second (between evals)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="best")
    return _save(plt, fig, path)


def leaderboard_plot(points: list[tuple[str, int, float, str, str]], path: Path) -> Path:
    """Minutes to train against accelerators, both on log scales, one point per system (label, accelerators,
    minutes, accelerator model, division), the fastest at each count named: faster is lower, and a line of equal
    accelerator-minutes runs diagonally."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 6))
    models = sorted({model for _, _, _, model, _ in points})
    colors = {model: plt.get_cmap("tab10")(i % 10) for i, model in enumerate(models)}
    for model in models:
        for division, marker in (("closed", "o"), ("open", "^")):
            mine = [(n, m) for _, n, m, mo, d in points if mo == model and (d == "closed") == (division == "closed")]
            if mine:
                ax.scatter([n for n, _ in mine], [m for _, m in mine], color=colors[model], marker=marker,
                           label=f"{model}{' (open)' if division == 'open' else ''}")
    fastest: dict[int, tuple[float, str]] = {}
    for label, count, minutes, _, _ in points:
        fastest[count] = min(fastest.get(count, (minutes, label)), (minutes, label))
    for count, (minutes, label) in fastest.items():  # the others at that count would be written over each other
        ax.annotate(label, (count, minutes), fontsize=6, xytext=(3, 2), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    from matplotlib.ticker import FuncFormatter

    for axis in (ax.xaxis, ax.yaxis):  # 8, 64, 0.3 rather than 8x10^0
        axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        axis.set_minor_formatter(FuncFormatter(lambda value, _: ""))
    ax.margins(x=0.25, y=0.1)  # room for the labels of the points at the edges
    ax.set_xlabel("accelerators")
    ax.set_ylabel("score: minutes to train")
    ax.grid(alpha=0.3, which="both")
    if points:
        ax.legend(fontsize=7, loc="best")
    return _save(plt, fig, path)
