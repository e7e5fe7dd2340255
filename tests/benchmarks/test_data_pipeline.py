"""benchmarks/data_pipeline.py's work folder: it writes and replaces files there, so it keeps to its own."""

import subprocess
import sys

from tests.helpers.repo import REPO


def test_a_work_folder_the_benchmark_did_not_make_is_refused_and_left_as_it_was(tmp_path):
    work = tmp_path / "mine"
    (work / "double").mkdir(parents=True)
    (work / "double" / "keep.txt").write_text("a user's file\n")
    done = subprocess.run([sys.executable, "-m", "benchmarks.data_pipeline", "--reference", str(tmp_path), "--work",
                           str(work), "--no-results"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert f"--work {work}: not empty and not a folder of this benchmark" in done.stderr
    assert sorted(p.name for p in work.rglob("*")) == ["double", "keep.txt"]
    assert (work / "double" / "keep.txt").read_text() == "a user's file\n"
