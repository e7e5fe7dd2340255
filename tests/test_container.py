"""The container: container/Dockerfile cannot be built here (no Docker engine), so what it runs is proven instead.
Its install step, container/install.sh, runs in a fresh virtual environment that sees, as NVIDIA's PyTorch
container would hold them, torch and the scientific libraries (this environment's own, without copying them) but
not click, rich or mlperf-logging: it adds exactly those and this package, never touches torch, and then the
command line runs. The Dockerfile builds on the NGC release NVIDIA's MLPerf v5.0 BERT submissions used, runs that
script, and leaves the harness's data and results out of its build context."""

import os
import re
import subprocess
import sys
from pathlib import Path

import torch

from tests.helpers.repo import REPO

NGC_BASE = "nvcr.io/nvidia/pytorch:25.04-py3"  # NVIDIA/benchmarks/bert/implementations/*/Dockerfile, v5.0
LACKING = ("click", "rich", "markdown_it", "mdurl", "pygments", "mlperf_logging")  # and their dist-info folders


def _container_like_python(tmp_path: Path) -> Path:
    """A fresh environment whose Python finds this one's packages through a .pth file, except LACKING and this
    harness. pip never uninstalls what lies outside the environment it installs into, so the packages shown to it
    stay untouched."""
    venv = tmp_path / "venv"  # pip and setuptools too come from the packages shown, as a container has its own
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = Path(torch.__file__).resolve().parents[1]
    shown = tmp_path / "container_site"
    shown.mkdir()
    for entry in site.iterdir():
        stem = re.split(r"-\d", entry.name.lower())[0]
        hidden = stem in LACKING or stem.startswith(("mlperf_bert", "__editable__", "markdown_it_py"))
        if not hidden and entry.suffix != ".pth":
            (shown / entry.name).symlink_to(entry)
    (next((venv / "lib").glob("python3*")) / "site-packages" / "container.pth").write_text(f"{shown}\n")
    return venv


def test_the_install_step_adds_only_what_a_python_with_torch_lacks(tmp_path):
    venv = _container_like_python(tmp_path)
    env = dict(os.environ, PATH=f"{venv / 'bin'}:{os.environ['PATH']}")
    env.pop("VIRTUAL_ENV", None)
    done = subprocess.run([str(REPO / "container" / "install.sh")], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    added = next(line for line in done.stderr.splitlines() if line.startswith("bootstrap: installing into python3 "))
    assert sorted(added.split(" lacks: ")[1].split()) == ["click", "mlperf-logging==4.1.68", "rich"]
    assert done.stdout.strip() == f"install: mlperf-bert installed in {venv / 'bin' / 'python3'}"
    probe = ("import importlib.metadata as m, torch, click, rich, mlperf_logging, bert.cli; "
             "print(torch.__file__, m.version('torch'), m.distribution('click').locate_file(''))")
    shown = subprocess.run([str(venv / "bin" / "python"), "-c", probe], env=env, capture_output=True, text=True,
                           timeout=120, check=True).stdout.split()
    assert shown[0] == str(tmp_path / "container_site" / "torch" / "__init__.py")  # the container's own torch
    assert shown[1] == torch.__version__ and str(venv) in shown[2]  # click went into the environment


def test_the_dockerfile_builds_on_nvidias_v5_image_with_that_install_step_and_a_lean_context():
    dockerfile = (REPO / "container" / "Dockerfile").read_text()
    instructions = [line.split(None, 1) for line in dockerfile.splitlines() if line and not line.startswith("#")]
    assert ["ARG", f"BASE={NGC_BASE}"] in instructions and ["FROM", "${BASE}"] in instructions
    assert ["RUN", "container/install.sh"] in instructions
    assert ["ENV", "MLPERF_BERT_SYSTEM_PYTHON=1"] in instructions  # run_and_time.sh uses the container's Python
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".venv", "data", "logs", "submission", "report"} <= set(ignored)
