"""bootstrap.sh, which run_and_time.sh and run_tests.sh source: nodes that start at once on a shared file system
install into one environment once; a half-made environment is completed; an install without a package registry
fails fast in one line; a system Python (an NVIDIA container's) gets what it lacks, never another torch. The
environment's python stands in for pip (a script that records each install) where what is tested is the
bootstrap's own locking and stamps; the real pip runs where its failure is what is tested."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.repo import REPO

FAKE_PYTHON = """#!/bin/sh
# -c "import torch" succeeds; "-m pip --version" succeeds once pip is there; "-m pip install ..." is recorded,
# takes a while, and exits with PIP_STATUS.
if [ "$1 $2 $3" = "-m pip --version" ]; then
    test -e "{venv}/pip-is-here"
    exit
fi
if [ "$1" = "-m" ]; then
    echo "$*" >> "{log}"
    sleep 2
    exit "${{PIP_STATUS:-0}}"
fi
exit 0
"""


def fake_venv(tmp_path: Path, with_pip: bool = True) -> tuple[Path, Path]:
    venv, log = tmp_path / "venv", tmp_path / "pip.log"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(FAKE_PYTHON.format(log=log, venv=venv))
    python.chmod(0o755)
    if with_pip:
        (venv / "pip-is-here").touch()
    return venv, log


def start_bootstrap(venv: Path, pip_status: int = 0, path: str = "/usr/bin:/bin", **env: str) -> subprocess.Popen:
    script = f'set -euo pipefail; source "{REPO / "bootstrap.sh"}" ""; echo "ready: ${{VIRTUAL_ENV:-python3}}"'
    env = {"PATH": path, "MLPERF_BERT_VENV": str(venv), "PIP_STATUS": str(pip_status), **env}
    return subprocess.Popen(["bash", "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_nodes_that_bootstrap_at_once_install_once_and_all_start(tmp_path):
    venv, log = fake_venv(tmp_path)
    nodes = [start_bootstrap(venv) for _ in range(3)]
    ended = [(node.wait(timeout=60), *node.communicate()) for node in nodes]
    assert [status for status, _, _ in ended] == [0, 0, 0], ended
    assert all(out.strip() == f"ready: {venv}" for _, out, _ in ended), ended
    installs = log.read_text().splitlines()
    assert installs == [f"-m pip install -q --retries 1 -e {REPO}"], installs
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


def test_a_venv_left_half_made_is_completed_not_a_dead_end(tmp_path):
    """A start stopped while `python3 -m venv` ran leaves bin/python without pip: every later start failed with
    "No module named pip" until the folder was removed by hand. Running `python3 -m venv` over it again
    completes it, keeping what is there (shown by hand on this machine; here a stand-in python3 records it)."""
    venv, log = fake_venv(tmp_path, with_pip=False)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "python3").write_text(f'#!/bin/sh\necho "python3 $*" >> "{log}"\ntouch "{venv}/pip-is-here"\n')
    (tools / "python3").chmod(0o755)
    started = start_bootstrap(venv, path=f"{tools}:/usr/bin:/bin")
    assert started.wait(timeout=60) == 0, started.communicate()
    out, err = started.communicate()
    assert f"bootstrap: {venv} is half made (no pip in it: a start stopped while making it); completing it" in err
    assert log.read_text().splitlines() == [f"python3 -m venv {venv}", f"-m pip install -q --retries 1 -e {REPO}"]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_without_a_package_registry_the_install_fails_fast_in_one_line(tmp_path):
    """The real pip, against a registry that refuses connections (a compute node without internet): pip's
    five retries with back-off per index page took minutes; now one retry, and one line naming the cause."""
    venv, log = fake_venv(tmp_path)
    python = venv / "bin" / "python"  # no torch, pip is the test's own
    python.write_text(f'#!/bin/sh\n[ "$1" = -c ] && exit 1\nexec "{sys.executable}" "$@"\n')
    started = time.monotonic()
    proc = start_bootstrap(venv, MLPERF_BERT_TORCH_VERSION="0.0.1", PIP_CONFIG_FILE=os.devnull, PIP_FIND_LINKS="",
                           PIP_INDEX_URL=f"http://127.0.0.1:{_closed_port()}/simple", PIP_DEFAULT_TIMEOUT="5")
    assert proc.wait(timeout=120) == 1
    took = time.monotonic() - started
    err = proc.communicate()[1].splitlines()
    assert err[0].startswith("bootstrap: preparing") and len(err) == 2, err
    assert err[1] == (f"bootstrap: cannot install torch==0.0.1 into {venv}: no package registry answers (Failed to "
                      "establish a new connection: [Errno 111] Connection refused); give this host access to one (or "
                      "a mirror: PIP_INDEX_URL), or make the environment on a host that has it (pip's output: "
                      f"{venv / '.bootstrap-pip.log'})")
    assert took < 30, took  # pip's own retries alone take ~8 s per page on an idle machine


def _container_python(tmp_path: Path, pip_status: int) -> tuple[Path, Path]:
    """An NVIDIA container's Python as far as bootstrap sees it: a Python whose installed distributions are a
    pre-release torch build and click (metadata only), with pip standing in as a recorder."""
    home = tmp_path / "container"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", home], check=True)
    site = next(home.glob("lib/python*/site-packages"))
    for name, version in (("torch", "2.6.0a0+ecf3bae40a.nv25.1"), ("click", "8.1.7")):
        info = site / f"{name}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    import packaging

    (site / "packaging").symlink_to(Path(packaging.__file__).parent)
    tools, log = tmp_path / "tools", tmp_path / "pip.log"
    tools.mkdir()
    refused = ("WARNING: Retrying after connection broken by 'NewConnectionError(': Failed to establish a new "
               "connection: [Errno 101] Network is unreachable')'")
    (tools / "python3").write_text(f"""#!/bin/bash
if [ "$1 $2" = "-m pip" ]; then
    echo "$*" >> "{log}"
    for arg in "$@"; do
        [ -n "$constraint" ] && cat "$arg" >> "{log}"
        constraint=; [ "$arg" = --constraint ] && constraint=1
    done
    [ {pip_status} = 0 ] || echo "{refused}"
    exit {pip_status}
fi
exec "{home}/bin/python" "$@"
""")
    (tools / "python3").chmod(0o755)
    return tools, log


def _start_with_system_python(tools: Path) -> subprocess.Popen:
    return start_bootstrap(tools / "unused", path=f"{tools}:/usr/bin:/bin", MLPERF_BERT_SYSTEM_PYTHON="1")


def test_a_system_python_gets_what_it_lacks_and_keeps_its_torch(tmp_path):
    tools, log = _container_python(tmp_path, pip_status=0)
    proc = _start_with_system_python(tools)
    assert proc.wait(timeout=60) == 0, proc.communicate()
    wanted = "mlperf-logging==4.1.68 h5py numpy pyyaml tokenizers rich"
    assert f"bootstrap: installing into python3 what it lacks: {wanted}" in proc.communicate()[1]
    calls = log.read_text().splitlines()
    assert calls[0].startswith("-m pip install -q --retries 1 --constraint /dev/fd/") and calls[0].endswith(wanted)
    assert calls[1] == "torch==2.6.0a0+ecf3bae40a.nv25.1"  # the constraint: the container's torch stays
    assert calls[2:] == [f"-m pip install -q --retries 1 --no-deps -e {REPO}"]


def test_a_system_python_without_a_registry_names_what_it_lacks_in_one_line(tmp_path):
    tools, _ = _container_python(tmp_path, pip_status=1)
    proc = _start_with_system_python(tools)
    assert proc.wait(timeout=60) == 1
    err = proc.communicate()[1].splitlines()
    assert len(err) == 2 and err[0].startswith("bootstrap: installing into python3 what it lacks:"), err
    assert err[1].startswith("bootstrap: cannot install mlperf-logging==4.1.68 h5py numpy pyyaml tokenizers rich into "
                             "python3 (modules this package needs): no package registry answers (Failed to establish "
                             "a new connection: [Errno 101] Network is unreachable); "), err
