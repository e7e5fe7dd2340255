"""The report's figures (matplotlib, Agg backend: no display needed), one PNG each."""

from __future__ import annotations

from pathlib import Path

from bert.mllog import TARGET_ACCURACY
from bert.mlperf_rules import MLPERF_TARGET_ACCURACY as MLPERF_TARGET
from compliance.errors import InputError
from compliance.result_log import ResultLog


class PlotError(InputError):
    pass


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise PlotError("the report needs matplotlib: pip install 'mlperf-bert[report]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt, fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _accuracy_axes(ax, logs: list[ResultLog], rcp_mean: float | None, rcp_label: str, top: float,
                   target: float) -> None:
    for log in logs:
        evals = log.evals
        ax.plot([e.samples for e in evals], [e.accuracy for e in evals], marker=".", linewidth=1,
                label=f"{log.path.stem} (seed {log.seed})")
    if top > target:
        ax.axhline(target, color="black", linestyle="--", linewidth=1,
                   label=f"{'MLPerf target' if target == MLPERF_TARGET else 'target'} {target:.3f}")
    if rcp_mean is not None:
        ax.axvline(rcp_mean, color="tab:red", linestyle=":", linewidth=1.5, label=rcp_label)
    ax.set_xlabel("training samples")
    ax.set_ylabel("masked-LM eval accuracy")
    ax.set_ylim(0, top)
    ax.grid(alpha=0.3)


def logged_target(logs: list[ResultLog]) -> float:
    """The target the runs logged (target_accuracy), when they all log the same one; else MLPerf's 0.720."""
    targets = [log.value(TARGET_ACCURACY) for log in logs]
    target = targets[0] if targets and all(t == targets[0] for t in targets) else None
    number = isinstance(target, (int, float)) and not isinstance(target, bool)
    return target if number and 0 < target < 1 else MLPERF_TARGET


def accuracy_plot(logs: list[ResultLog], rcp_mean: float | None, rcp_label: str, path: Path) -> Path:
    """Eval accuracy against training samples for every run, the target they logged (logged_target) and the
    RCP mean; runs that stay far below the target get a second, zoomed panel so that their curves can be told
    apart."""
    plt = _pyplot()
    target = logged_target(logs)
    best = max((e.accuracy for log in logs for e in log.evals), default=0.0)
    zoom = 0 < best < target / 2
    fig, axes = plt.subplots(2 if zoom else 1, 1, figsize=(8, 7 if zoom else 4.5), squeeze=False)
    _accuracy_axes(axes[0][0], logs, rcp_mean, rcp_label, 1.0, target)
    axes[0][0].legend(fontsize=7, ncol=2, loc="best")
    if zoom:
        _accuracy_axes(axes[1][0], logs, rcp_mean, rcp_label, best * 1.1, target)
        axes[1][0].set_title("zoomed to the runs' accuracy (the target is off the scale)", fontsize=9)
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
