"""Ten real cpu_micro runs through run_and_time.sh and their package, made once per session and shared."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bert.system import load_system
from tests.helpers.compliance import MICRO_EVAL, MicroPackage, cli
from tests.helpers.repo import REPO


@pytest.fixture(scope="session")
def micro_system_path(tmp_path_factory) -> Path:
    """The descriptor of the ten runs: systems/cpu_micro.json with MICRO_EVAL (its name stays cpu_micro)."""
    return load_system("cpu_micro").variant({"eval": MICRO_EVAL}).write(tmp_path_factory.mktemp("micro_system")).path


@pytest.fixture(scope="session")
def micro_runs(micro_system_path, tmp_path_factory) -> Path:
    """`NEXP=10 ./run_and_time.sh cpu_micro` (a few seconds a run on a quiet machine): the folder of
    result_0..9.txt. One thread per run, as the other tests' subprocesses: on a shared machine two spinning
    threads per run are several times slower than one."""
    root = tmp_path_factory.mktemp("micro_runs")
    env = dict(os.environ, NEXP="10", SEED="100", LOGDIR=str(root / "logs"), DATADIR=str(root / "data"))
    env.setdefault("OMP_NUM_THREADS", "1")
    try:  # the limit only guards against a hang: a busy shared machine can make the ten runs slow
        proc = subprocess.run([str(REPO / "run_and_time.sh"), str(micro_system_path)], env=env,
                              capture_output=True, text=True, timeout=3600)
    except subprocess.TimeoutExpired:
        done = sorted(p.name for p in (root / "logs" / "cpu_micro").glob("result_*.txt"))
        pytest.fail(f"ten cpu_micro runs took over an hour (logs so far: {', '.join(done) or 'none'})")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return root / "logs" / "cpu_micro"


@pytest.fixture(scope="session")
def micro_package(micro_system_path, micro_runs, tmp_path_factory) -> MicroPackage:
    out = tmp_path_factory.mktemp("package")
    result = cli("package", "--system", micro_system_path, "--logs", micro_runs, "--org", "MLPerf", "--out", out)
    return MicroPackage(micro_system_path, micro_runs, out, out / "MLPerf", result)
