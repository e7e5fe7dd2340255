"""bootstrap.sh, which run_and_time.sh and run_tests.sh source: nodes that start at once on a shared file system
install into one environment once. The environment's python stands in for pip (a script that records each
install); what is tested is the bootstrap's own locking and stamps."""

import subprocess
from pathlib import Path

from tests.helpers.repo import REPO

FAKE_PYTHON = """#!/bin/sh
# -c "import torch" succeeds; "-m pip install ..." is recorded, takes a while, and exits with PIP_STATUS.
if [ "$1" = "-m" ]; then
    echo "$*" >> "{log}"
    sleep 2
    exit "${{PIP_STATUS:-0}}"
fi
exit 0
"""


def fake_venv(tmp_path: Path) -> tuple[Path, Path]:
    venv, log = tmp_path / "venv", tmp_path / "pip.log"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(FAKE_PYTHON.format(log=log))
    python.chmod(0o755)
    return venv, log


def start_bootstrap(venv: Path, pip_status: int = 0) -> subprocess.Popen:
    script = f'set -euo pipefail; source "{REPO / "bootstrap.sh"}" ""; echo "ready: $VIRTUAL_ENV"'
    env = {"PATH": "/usr/bin:/bin", "MLPERF_BERT_VENV": str(venv), "PIP_STATUS": str(pip_status)}
    return subprocess.Popen(["bash", "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_nodes_that_bootstrap_at_once_install_once_and_all_start(tmp_path):
    venv, log = fake_venv(tmp_path)
    nodes = [start_bootstrap(venv) for _ in range(3)]
    ended = [(node.wait(timeout=60), *node.communicate()) for node in nodes]
    assert [status for status, _, _ in ended] == [0, 0, 0], ended
    assert all(out.strip() == f"ready: {venv}" for _, out, _ in ended), ended
    installs = log.read_text().splitlines()
    assert installs == [f"-m pip install -q -e {REPO}"], installs
    waited = [err for _, _, err in ended if "waiting for another install" in err]
    assert len(waited) == 2, ended
    assert len(list(venv.glob(".installed-*-base"))) == 1


def test_a_failed_install_leaves_no_stamp_and_the_next_start_installs(tmp_path):
    venv, log = fake_venv(tmp_path)
    failed = start_bootstrap(venv, pip_status=1)
    assert failed.wait(timeout=60) != 0 and "ready" not in failed.communicate()[0]
    assert not list(venv.glob(".installed-*"))
    retried = start_bootstrap(venv)
    assert retried.wait(timeout=60) == 0, retried.communicate()
    assert len(log.read_text().splitlines()) == 2 and list(venv.glob(".installed-*-base"))
