"""Ten real cpu_micro runs packaged (compliance.package) and accepted by the official package checker; a package
that would fail, or an output folder that is no folder, refused with nothing written; a failure midway leaving
nothing half-written."""

import errno
import json
import os
import subprocess
import sys

import pytest
import torch

import compliance.package as package_module
from bert.mlperf_rules import DEFAULT_RULESET
from compliance.checkers import PACKAGE_SUCCESS
from tests.compliance.fakes import write_runs
from tests.helpers.compliance import cli
from tests.helpers.repo import REPO


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
