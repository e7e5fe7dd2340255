"""An output folder replaced in one step (compliance.output_folder): SIGTERM to `package` mid-build leaves no staging
tree and the previous tree whole, and what a killed build left is cleaned up (or put back) by the next."""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from compliance.output_folder import build_in_place, replace_folder
from tests.compliance.fakes import write_runs
from tests.helpers.compliance import cli
from tests.helpers.repo import REPO

# `mlperf-bert package`, paused once its code folder is written (until a signal ends it): the build is the real one.
PAUSED_PACKAGE = """import sys, time
import compliance.package as package
extract = package._extract
def paused(archive, dest):
    extract(archive, dest)
    print("extracted", flush=True)
    time.sleep(120)
package._extract = paused
from bert.cli import main
main(sys.argv[1:])
"""


def _tree(folder: Path) -> dict[Path, bytes]:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _package_paused(logs: Path, out: Path) -> subprocess.Popen:
    scratch = out.parent / "tmp"  # a killed `package` leaves its scratch copy of the logs: here, not in /tmp
    scratch.mkdir(exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", PAUSED_PACKAGE, "package", "--system", "cpu_micro", "--logs",
                             str(logs), "--org", "MLPerf", "--out", str(out), "--force"], cwd=REPO,
                            env={**os.environ, "TMPDIR": str(scratch)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "extracted\n", proc.communicate(timeout=60)
    return proc


def test_sigterm_mid_build_leaves_no_staging_tree_and_the_previous_tree_whole(tmp_path):
    """It left a hidden half-built tree beside the package: `score` of the output then found two submissions ("not a
    submission") and `check` of the hidden tree alone passed it."""
    logs, out = write_runs(tmp_path / "logs"), tmp_path / "out"
    assert cli("package", "--system", "cpu_micro", "--logs", logs, "--org", "MLPerf", "--out", out).exit_code == 0
    before = _tree(out)
    proc = _package_paused(logs, out)
    assert len(list(out.iterdir())) == 2  # the package and the staging tree it is building
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert [p.name for p in out.iterdir()] == ["MLPerf"] and _tree(out) == before
    assert list((tmp_path / "tmp").iterdir()) == []  # nor its scratch copy of the logs


def test_what_a_killed_build_left_is_removed_by_the_next_and_a_tree_moved_aside_comes_back(tmp_path):
    logs, out = write_runs(tmp_path / "logs"), tmp_path / "out"
    assert cli("package", "--system", "cpu_micro", "--logs", logs, "--org", "MLPerf", "--out", out).exit_code == 0
    before = _tree(out)
    proc = _package_paused(logs, out)
    proc.kill()  # SIGKILL: no cleanup runs
    proc.communicate(timeout=60)
    (staging,) = [p for p in out.iterdir() if p.name != "MLPerf"]
    assert staging.name.startswith(f".MLPerf.partial-{socket.gethostname()}-{proc.pid}-")
    # A build killed between the two renames of the swap: the previous tree moved aside, none in place.
    aside = out / f".MLPerf.old-{socket.gethostname()}-{proc.pid}-0123abcd"
    (out / "MLPerf").rename(aside)
    elsewhere = out / f".MLPerf.partial-another-host-{proc.pid}-0123abcd"  # another host's build may be at work
    elsewhere.mkdir()
    built = []
    build_in_place(out / "MLPerf", lambda folder: built.append(_tree(out)))
    assert built == [before]  # the previous tree was back before the build started
    assert sorted(p.name for p in out.iterdir()) == [elsewhere.name, "MLPerf"]


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
