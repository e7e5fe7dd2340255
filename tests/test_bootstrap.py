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

import pytest

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


REQUIREMENTS = (("mlperf-logging", "4.1.68"), ("h5py", "3.11.0"), ("numpy", "1.26.4"), ("pyyaml", "6.0.1"),
                ("tokenizers", "0.19.1"), ("rich", "13.7.1"))


def _distribution(site: Path, name: str, version: str, record: str = "") -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "RECORD").write_text(record)


def _container_python(tmp_path: Path, pip_status: int, everything: bool = False) -> tuple[Path, Path]:
    """An NVIDIA container's Python as far as bootstrap sees it: a Python whose installed distributions are a
    pre-release torch build and click (metadata only; `everything`: every requirement), with pip standing in as
    a recorder, whose editable install of a checkout puts it on the path with its command, as pip's does."""
    home = tmp_path / "container"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", home], check=True)
    site = next(home.glob("lib/python*/site-packages"))
    for name, version in (("torch", "2.6.0a0+ecf3bae40a.nv25.1"), ("click", "8.1.7"),
                          *(REQUIREMENTS if everything else ())):
        _distribution(site, name, version)
    import packaging

    (site / "packaging").symlink_to(Path(packaging.__file__).parent)
    tools, log = tmp_path / "tools", tmp_path / "pip.log"
    tools.mkdir()
    refused = ("WARNING: Retrying after connection broken by 'NewConnectionError(': Failed to establish a new "
               "connection: [Errno 101] Network is unreachable')'")
    info = site / "mlperf_bert-0.1.0.dist-info"
    (tools / "python3").write_text(f"""#!/bin/bash
install_editable() {{  # what pip's editable install leaves: the checkout on the path, its metadata, its command
    echo "$1" > "{site}/editable.pth"
    mkdir -p "{info}" && echo "../../../bin/mlperf-bert,," > "{info}/RECORD"
    printf "Metadata-Version: 2.1\\nName: mlperf-bert\\nVersion: 0.1.0\\n" > "{info}/METADATA"
    printf "#!/bin/sh\\n" > "{home}/bin/mlperf-bert" && chmod +x "{home}/bin/mlperf-bert"
}}
if [ "$1 $2" = "-m pip" ]; then
    echo "$*" >> "{log}"
    for arg in "$@"; do
        [ -n "$constraint" ] && cat "$arg" >> "{log}"
        constraint=; [ "$arg" = --constraint ] && constraint=1
        [ -n "$editable" ] && [ {pip_status} = 0 ] && install_editable "$arg"
        editable=; [ "$arg" = -e ] && editable=1
    done
    [ {pip_status} = 0 ] || echo "{refused}"
    exit {pip_status}
fi
exec "{home}/bin/python" "$@"
""")
    (tools / "python3").chmod(0o755)
    return tools, log


def _start_with_system_python(tools: Path, **env: str) -> subprocess.Popen:
    return start_bootstrap(tools / "unused", path=f"{tools}:/usr/bin:/bin", MLPERF_BERT_SYSTEM_PYTHON="1", **env)


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
    assert proc.communicate()[0] == "ready: python3\n"


def test_a_system_python_without_a_registry_names_what_it_lacks_in_one_line(tmp_path):
    tools, _ = _container_python(tmp_path, pip_status=1)
    proc = _start_with_system_python(tools)
    assert proc.wait(timeout=60) == 1
    err = proc.communicate()[1].splitlines()
    assert len(err) == 2 and err[0].startswith("bootstrap: installing into python3 what it lacks:"), err
    assert err[1].startswith("bootstrap: cannot install mlperf-logging==4.1.68 h5py numpy pyyaml tokenizers rich into "
                             "python3 (modules this package needs): no package registry answers (Failed to establish "
                             "a new connection: [Errno 101] Network is unreachable); "), err


def test_pips_output_never_goes_through_a_link_planted_at_a_fixed_name(tmp_path):
    """It went to $TMPDIR/mlperf-bert-bootstrap-$UID.log, through whatever link another user planted there (in /tmp,
    fs.protected_symlinks is 0 on many machines): the link's target was overwritten."""
    tools, _ = _container_python(tmp_path, pip_status=0)
    victim = tmp_path / "my_notes.txt"
    victim.write_text("mine\n")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    (temporary / f"mlperf-bert-bootstrap-{os.getuid()}.log").symlink_to(victim)
    proc = _start_with_system_python(tools, TMPDIR=str(temporary))
    assert proc.wait(timeout=60) == 0, proc.communicate()
    assert victim.read_text() == "mine\n"
    assert [p.name for p in temporary.iterdir()] == [f"mlperf-bert-bootstrap-{os.getuid()}.log"]  # its own is gone


def test_a_system_python_with_another_checkouts_code_is_not_taken_for_this_one(tmp_path):
    """An image built from an older commit, with this checkout mounted: `import bert.cli` worked (the old code, or
    this folder's as the cwd) and an mlperf-bert was on PATH, so the old code ran. This checkout is installed; a
    copy that still comes first is named in one line."""
    tools, log = _container_python(tmp_path, pip_status=0, everything=True)
    older = tmp_path / "older"
    (older / "bert" / "cli").mkdir(parents=True)
    for folder in (older / "bert", older / "bert" / "cli"):
        (folder / "__init__.py").write_text("")
    (tools / "mlperf-bert").write_text("#!/bin/sh\necho the older harness\n")
    (tools / "mlperf-bert").chmod(0o755)
    proc = _start_with_system_python(tools, PYTHONPATH=str(older))
    assert proc.wait(timeout=60) == 1
    assert proc.communicate()[1].splitlines() == [
        f"bootstrap: python3 imports bert from {older / 'bert'}, not from this checkout ({REPO}), even after "
        "installing this one: remove that copy from PYTHONPATH or from python3's site-packages"]
    assert log.read_text().splitlines() == [f"-m pip install -q --retries 1 --no-deps -e {REPO}"]
    installed = _start_with_system_python(tools)  # the copy gone: this checkout's command comes first
    out = installed.communicate(timeout=60)[0]
    assert installed.returncode == 0 and out == "ready: python3\n"
    script = f'source "{REPO / "bootstrap.sh"}" ""; command -v mlperf-bert'
    found = subprocess.run(["bash", "-c", script], env={"PATH": f"{tools}:/usr/bin:/bin",
                                                         "MLPERF_BERT_SYSTEM_PYTHON": "1"},
                           capture_output=True, text=True, timeout=60)
    assert found.stdout == f"{tmp_path / 'container' / 'bin' / 'mlperf-bert'}\n", found.stderr


def test_a_setuptools_that_builds_no_wheel_is_the_cause_in_the_line(tmp_path):
    """A Python with setuptools before 70.1 and no `wheel` cannot build this package itself ("invalid command
    'bdist_wheel'"); the line said "hint: See above for details." Its build tools come from a registry, and
    without one the line says so. The real pip and setuptools, as `python3 -m venv` bundles them."""
    home = tmp_path / "python"
    subprocess.run([sys.executable, "-m", "venv", home], check=True, timeout=300)
    python = home / "bin" / "python"
    probe = "import setuptools\ntry:\n import wheel\nexcept ImportError:\n import setuptools.command.bdist_wheel"
    if subprocess.run([str(python), "-c", probe], capture_output=True).returncode != 1:
        pytest.skip("this Python's venv bundles no setuptools, or one that builds wheels by itself")
    site = next(home.glob("lib/python*/site-packages"))
    for name, version in (("torch", "2.13.0"), ("click", "8.1.7"), *REQUIREMENTS):
        _distribution(site, name, version)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "python3").write_text(f'#!/bin/sh\nexec "{python}" "$@"\n')  # a link would leave the venv behind
    (tools / "python3").chmod(0o755)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        index = f"http://127.0.0.1:{closed.getsockname()[1]}/simple"
    proc = _start_with_system_python(tools, PIP_CONFIG_FILE=os.devnull, PIP_FIND_LINKS="", PIP_INDEX_URL=index,
                                     PIP_DEFAULT_TIMEOUT="5", TMPDIR=str(tmp_path))
    assert proc.wait(timeout=300) == 1
    (line,) = proc.communicate()[1].splitlines()
    assert line.startswith("bootstrap: cannot install this package into python3 (its setuptools builds no wheel "
                           "without the wheel module: a registry provides both): no package registry answers "
                           "(Failed to establish a new connection: [Errno 111] Connection refused)"), line
