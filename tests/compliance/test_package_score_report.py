"""Ten real cpu_micro runs, packaged, accepted by the official package checker, scored and reported."""

import errno
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import compliance.package as package_module
from bert.mlperf_rules import DEFAULT_RULESET, RULESETS
from compliance.checkers import PACKAGE_SUCCESS
from compliance.folders import replace_folder
from tests.compliance.fakes import write_runs
from tests.helpers.compliance import cli
from tests.helpers.repo import REPO


def _olympic_minutes(logs_dir) -> float:
    """The score recomputed from the raw lines, without compliance/: run_start to run_stop, minutes, olympic."""
    minutes = []
    for path in logs_dir.glob("result_*.txt"):
        stamps = {}
        for line in path.read_text().splitlines():
            if line.startswith(":::MLLOG "):
                event = json.loads(line[len(":::MLLOG "):])
                stamps.setdefault(event["key"], event["time_ms"])
        minutes.append((stamps["run_stop"] - stamps["run_start"]) / 60_000)
    assert len(minutes) == 10
    minutes.sort()
    return sum(minutes[1:-1]) / 8


def test_package_writes_the_tree_and_its_check_passes(micro_package):
    result, org = micro_package.package_result, micro_package.org
    assert result.exit_code == 0, result.output
    assert "packaged" in result.output and "VERDICT: PASS" in result.output
    descriptor = json.loads(micro_package.system.read_text())
    described = json.loads((org / "systems" / "cpu_micro.json").read_text())
    software = ("framework", "other_software_stack")  # from what the runs logged (compliance.software)
    assert {k: v for k, v in described.items() if k not in software} == \
        {k: v for k, v in descriptor["system"].items() if k not in software}
    assert described["framework"] == f"PyTorch {torch.__version__} (CPU)"
    assert described["other_software_stack"]["stated"] == descriptor["system"]["other_software_stack"]
    results = org / "results" / "cpu_micro" / "bert"
    assert sorted(p.name for p in results.iterdir()) == sorted(f"result_{i}.txt" for i in range(10))
    for i in range(10):
        assert (results / f"result_{i}.txt").read_bytes() == (micro_package.logs / f"result_{i}.txt").read_bytes()
    impl = org / "benchmarks" / "bert" / "implementations" / "pytorch"
    for tracked in ("README.md", "run_and_time.sh", "setup.cfg", "bert/train.py", "bert/mllog.py"):
        assert (impl / tracked).read_bytes() == (REPO / tracked).read_bytes() or tracked in _changed_files()
    assert os.access(impl / "run_and_time.sh", os.X_OK)
    assert (impl / "systems" / "cpu_micro.json").read_text() == micro_package.system.read_text()
    assert [p.name for p in micro_package.out.iterdir()] == ["MLPerf"]  # no staging folder left behind


def _changed_files() -> set[str]:
    """Tracked files that differ from HEAD (the package holds HEAD's version of them)."""
    diff = subprocess.run(["git", "-C", str(REPO), "diff", "--name-only", "HEAD"], capture_output=True, text=True)
    return set(diff.stdout.split())


def test_official_package_checker_accepts_the_package(micro_package, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "mlperf_logging.package_checker", str(micro_package.org),
                           "training", DEFAULT_RULESET], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert PACKAGE_SUCCESS in proc.stdout + proc.stderr, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_score_is_the_olympic_mean_of_the_run_times(micro_package):
    result = cli("score", micro_package.out)  # the --out folder, which holds the one ORG
    assert result.exit_code == 0, result.output
    row = re.search(r"cpu_micro\s*│\s*open\s*│\s*([0-9.]+)\s*│\s*([0-9,]+) \(logs\)\s*│\s*n/a \(open division\)\s*"
                    r"│\s*1\.0000\s*│\s*10", result.output)
    assert row, result.output
    # The score is printed to 5 decimals: half a unit of the last one, plus float rounding of the two sides.
    assert abs(float(row.group(1)) - _olympic_minutes(micro_package.logs)) <= 5e-6 + 1e-12
    assert "VERDICT: PASS" in result.output
    assert not list(micro_package.org.rglob("scaling.json"))  # the tools ran on a copy


def test_check_accepts_the_package_the_logs_folder_and_one_log(micro_package):
    """`package` has checked the tree under 5.0.0 already: here the tree under 4.1.0, the logs folder and one log."""
    for target, ruleset in ((micro_package.org, RULESETS[0]), (micro_package.logs, DEFAULT_RULESET),
                            (micro_package.logs / "result_0.txt", DEFAULT_RULESET)):
        result = cli("check", target, "--ruleset", ruleset)
        assert result.exit_code == 0, result.output
        assert "VERDICT: PASS" in result.output and f"(ruleset {ruleset}" in result.output


def test_report_writes_markdown_and_its_figures(micro_package, tmp_path):
    out = tmp_path / "report"
    result = cli("report", micro_package.org, "-o", out)
    assert result.exit_code == 0, result.output
    markdown = (out / "report.md").read_text()
    assert "## Verdict: PASS" in markdown and "## System `cpu_micro`" in markdown
    figures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", markdown)
    assert figures == ["cpu_micro_accuracy.png", "cpu_micro_run_times.png", "cpu_micro_throughput.png"]
    for name in figures:
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    runs = [line for line in markdown.splitlines() if line.startswith("| result_")]
    assert len(runs) == 10
    assert sum(line.endswith("| scored |") for line in runs) == 8
    assert f"| {_olympic_minutes(micro_package.logs):,.4f} |" in markdown
    again = cli("report", micro_package.org, "-o", out)  # an earlier report is replaced
    assert again.exit_code == 0
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == sorted(figures + ["report.md"])


def test_package_refuses_an_existing_tree_without_force(tmp_path):
    logs = write_runs(tmp_path / "logs")
    out = tmp_path / "out"
    first = cli("package", "--system", "cpu_micro", "--logs", logs, "--org", "MLPerf", "--out", out)
    assert first.exit_code == 0, first.output
    marker = out / "MLPerf" / "results" / "cpu_micro" / "bert" / "result_0.txt"
    marker.write_text("kept")
    again = cli("package", "--system", "cpu_micro", "--logs", logs, "--org", "MLPerf", "--out", out)
    assert again.exit_code == 1
    assert f"{out / 'MLPerf'} already exists; pass --force to replace it" in again.output
    assert marker.read_text() == "kept"
    forced = cli("package", "--system", "cpu_micro", "--logs", logs, "--org", "MLPerf", "--out", out, "--force")
    assert forced.exit_code == 0, forced.output
    assert marker.read_bytes() == (logs / "result_0.txt").read_bytes()
    assert [p.name for p in out.iterdir()] == ["MLPerf"]


@pytest.mark.parametrize("kind", ["symlink", "file"])
def test_package_force_onto_an_org_that_is_no_folder_changes_nothing_and_says_so(tmp_path, kind):
    """--force onto ORG as a link to a user's folder used to replace the link and then fail to remove it, saying
    "nothing was changed"."""
    logs, out, users = write_runs(tmp_path / "logs"), tmp_path / "out", tmp_path / "users"
    users.mkdir()
    (users / "notes.md").write_text("mine")
    out.mkdir()
    (out / "MLPerf").symlink_to(users) if kind == "symlink" else (out / "MLPerf").write_text("mine")
    result = cli("package", "--system", "cpu_micro", "--logs", logs, "--org", "MLPerf", "--out", out, "--force")
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 1 and len(lines) == 1, result.output
    what = f"is a symbolic link (to {users}), not a folder" if kind == "symlink" else "is a file, not a folder"
    assert lines[0].startswith(f"Error: {out / 'MLPerf'}: {what}; nothing was written"), lines
    assert [p.name for p in out.iterdir()] == ["MLPerf"]
    if kind == "symlink":
        assert os.readlink(out / "MLPerf") == str(users) and [p.name for p in users.iterdir()] == ["notes.md"]
    else:
        assert (out / "MLPerf").read_text() == "mine"


def test_package_refuses_logs_that_would_fail_and_writes_nothing(tmp_path):
    logs = write_runs(tmp_path / "logs", count=9)
    result = cli("package", "--system", "cpu_micro", "--logs", logs, "--org", "MLPerf", "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert "not packaged, nothing written" in result.output
    assert "9 result logs; a BERT submission needs exactly 10" in result.output
    assert not (tmp_path / "out").exists()


def _failing_midway(monkeypatch):
    """Makes the implementation step of `package` fail after it has written part of the code folder."""
    def extract(archive, dest):
        (dest / "README.md").write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device", str(dest / "bert"))
    monkeypatch.setattr(package_module, "_extract", extract)


def test_a_failure_midway_leaves_no_partial_tree(tmp_path, monkeypatch):
    logs = write_runs(tmp_path / "logs")
    out = tmp_path / "out"
    _failing_midway(monkeypatch)
    result = cli("package", "--system", "cpu_micro", "--logs", logs, "--org", "MLPerf", "--out", out)
    assert result.exit_code == 1
    assert "No space left on device; nothing was changed" in result.output and "/bert" in result.output
    assert list(out.iterdir()) == []


def test_a_failure_midway_with_force_keeps_the_existing_tree(tmp_path, monkeypatch):
    logs = write_runs(tmp_path / "logs")
    out = tmp_path / "out"
    assert cli("package", "--system", "cpu_micro", "--logs", logs, "--org", "MLPerf", "--out", out).exit_code == 0
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    _failing_midway(monkeypatch)
    result = cli("package", "--system", "cpu_micro", "--logs", logs, "--org", "MLPerf", "--out", out, "--force")
    assert result.exit_code == 1 and "nothing was changed" in result.output
    assert [p.name for p in out.iterdir()] == ["MLPerf"]
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_replace_folder_puts_the_old_tree_back_when_the_move_fails(tmp_path, monkeypatch):
    target, built = tmp_path / "Org", tmp_path / "new"
    (target / "results").mkdir(parents=True)
    (target / "results" / "kept.txt").write_text("old")
    built.mkdir()
    real_rename = Path.rename

    def rename(self, dest):
        if self == built:
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return real_rename(self, dest)
    monkeypatch.setattr(Path, "rename", rename)
    with pytest.raises(OSError, match="cross-device"):
        replace_folder(built, target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Org", "new"]
    assert (target / "results" / "kept.txt").read_text() == "old"
