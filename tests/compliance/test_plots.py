"""The report's figures (compliance.plots): the accuracy figure draws the target the runs logged (a development
system's own, not MLPerf's 0.720), and MLPerf's where the logs do not agree on one or state none; without
matplotlib the figures' commands say at once, in one line, the command that installs it."""

import configparser
import sys

import pytest

from compliance import report, review
from compliance.plots import HARNESS_ROOT, INSTALL_REPORT, MLPERF_TARGET, logged_target
from compliance.result_log import read_result_log
from tests.compliance.fakes import micro_system, write_package, write_run
from tests.helpers.compliance import cli


def test_the_target_drawn_is_the_one_the_runs_logged(tmp_path):
    micro = micro_system()
    logs = [read_result_log(write_run(tmp_path / f"result_{i}.txt", i, micro)) for i in range(2)]
    assert logged_target(logs) == micro.run.eval.target_accuracy == 0.06
    other = micro.variant({"eval.target_accuracy": 0.5})
    logs.append(read_result_log(write_run(tmp_path / "result_2.txt", 2, other)))
    assert logged_target(logs) == MLPERF_TARGET  # two targets: none of them is the runs'
    stated = tmp_path / "result_3.txt"
    stated.write_text("".join(line for line in (tmp_path / "result_0.txt").open() if "target_accuracy" not in line))
    assert logged_target([read_result_log(stated)]) == MLPERF_TARGET


def test_without_matplotlib_report_and_review_name_the_bootstrap_extra_before_any_work(tmp_path, monkeypatch):
    org = write_package(tmp_path / "Org")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` fails as on a Python without it
    for module in (report, review):
        monkeypatch.setattr(module, "score_tree", lambda *a, **k: pytest.fail("scored before drawing was possible"))
    for command in ("report", "review"):
        result = cli(command, org, "-o", tmp_path / command)
        assert result.exit_code == 1 and not (tmp_path / command).exists()
        assert result.output.strip() == f"Error: the figures need matplotlib, which this Python lacks: run " \
            f"`{INSTALL_REPORT}` (the harness's report extra), or `pip install matplotlib`, then run the command again"
    # The command is the bootstrap's, with an extra setup.cfg declares (the bootstrap installs `-e REPO[EXTRAS]`).
    bootstrap = HARNESS_ROOT / "bootstrap.sh"
    assert INSTALL_REPORT == f"source {bootstrap} report" and bootstrap.is_file()
    config = configparser.ConfigParser()
    config.read(HARNESS_ROOT / "setup.cfg")
    assert "matplotlib" in config["options.extras_require"]["report"].split()


def _first_axes_limits(monkeypatch, draw) -> tuple[float, float]:
    from compliance import plots

    seen = []
    monkeypatch.setattr(plots, "_save", lambda plt, fig, path: seen.append(fig.axes[0].get_ylim()) or path)
    draw()
    return seen[0]


def test_the_accuracy_figure_is_zoomed_where_the_runs_end(tmp_path, monkeypatch):
    from compliance.plots import ZOOM_BELOW_TARGET, accuracy_plot

    closed = micro_system("closed", 448).variant({"eval.target_accuracy": MLPERF_TARGET})
    reaching = [read_result_log(write_run(tmp_path / f"r{i}.txt", i, closed, accuracies=(0.5, 0.71, 0.7205 + i / 1e4)))
                for i in range(3)]
    low, high = _first_axes_limits(monkeypatch, lambda: accuracy_plot(reaching, None, "", tmp_path / "a.png"))
    assert (low, high) == pytest.approx((0.720 - ZOOM_BELOW_TARGET, 0.7207 + 0.01))
    far = [read_result_log(write_run(tmp_path / "f.txt", 9, closed, accuracies=(0.1, 0.2)))]
    low, high = _first_axes_limits(monkeypatch, lambda: accuracy_plot(far, None, "", tmp_path / "b.png"))
    assert (low, high) == pytest.approx((0.0, 0.22))
