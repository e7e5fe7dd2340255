"""Fault injection: runs of the micro model on 2 gloo ranks that a test breaks mid-run, and the checks every
case shares (the processes end, the exit code is non-zero, the log parses and ends with an aborted run_stop
and its reason)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from mlperf_logging.compliance_checker.mlp_parser import parse_file
from mlperf_logging.compliance_checker.mlp_parser.ruleset_500 import parse_generator

from benchmarks.common.ranks import free_port
from bert.mlperf_rules import DEFAULT_RULESET
from bert.system import load_descriptor
from tests.helpers.repo import REPO
from tests.helpers.runs import torchrun_command, train_command

# Every case must end well within this; a hang fails the test instead of stalling the suite.
CASE_TIMEOUT_S = 50
DIST_TIMEOUT_S = 4
RANKS = 2


def fault_descriptor(folder: Path, **run_changes) -> Path:
    """cpu_micro on 2 ranks that would train for a long time (an unreachable target, a far cap), with a
    process-group timeout of seconds and the numerics checked every 2 steps."""
    changes = {"processes_per_node": RANKS, "dist_timeout_s": DIST_TIMEOUT_S, "max_samples": 10**7,
               "print_interval_steps": 2, "eval.target_accuracy": 0.99, "eval.interval_samples": 4096}
    return load_descriptor("cpu_micro").variant({**changes, **run_changes}, name="faulty_micro").write(folder).path


def torchrun(system: Path, data: Path, log: Path, env: dict, seed: int = 1) -> subprocess.Popen:
    return subprocess.Popen(torchrun_command(RANKS, system, data, log, seed), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def start_ranks(system: Path, data: Path, log: Path, env: dict, out: Path) -> list[subprocess.Popen]:
    """The ranks alone, with the environment torchrun would give them: for faults whose end the launcher
    would decide (torchrun kills the ranks left 30 s after one failed, whatever --shutdown-timeout says)."""
    port = free_port()
    procs = []
    for rank in range(RANKS):
        rank_env = dict(env, RANK=str(rank), WORLD_SIZE=str(RANKS), LOCAL_RANK=str(rank),
                        LOCAL_WORLD_SIZE=str(RANKS), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        with open(out / f"rank{rank}.out", "w") as stdout, open(out / f"rank{rank}.err", "w") as stderr:
            procs.append(subprocess.Popen(train_command(system, data, log), env=rank_env, stdout=stdout,
                                          stderr=stderr))
    return procs


def wait_bounded(procs: list[subprocess.Popen], timeout: float = CASE_TIMEOUT_S,
                 kill: Callable[[subprocess.Popen], object] = subprocess.Popen.kill,
                 last_words: Callable[[], str] = str) -> list[int]:
    """The processes' exit codes; kills them all (with `kill`) and fails the test if any runs past the timeout,
    quoting `last_words()`."""
    deadline = time.monotonic() + timeout
    try:
        return [p.wait(timeout=max(deadline - time.monotonic(), 0.1)) for p in procs]
    except subprocess.TimeoutExpired:
        for p in procs:
            kill(p)
        pytest.fail(f"still running after {timeout:.0f} s:\n{last_words()}")


def finish(proc: subprocess.Popen, timeout: float = CASE_TIMEOUT_S) -> tuple[int, str, str]:
    """Waits for the launcher (bounded); kills its whole session and fails the test if it hangs."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"still running after {timeout:.0f} s:\n{out[-2000:]}\n{err[-3000:]}")
    return proc.returncode, out, err


def wait_for_training(log_glob: tuple[Path, str], proc: subprocess.Popen, steps: int = 4) -> None:
    """Returns once a log matching log_glob shows the run training (block_start) and `steps` more steps of
    time have passed; fails if the launcher ended first."""
    folder, pattern = log_glob
    deadline = time.monotonic() + CASE_TIMEOUT_S
    while time.monotonic() < deadline:
        if any("block_start" in p.read_text() for p in folder.glob(pattern)):
            time.sleep(0.2 * steps)
            return
        if proc.poll() is not None:
            err = proc.stderr.read()[-3000:] if proc.stderr else ""
            pytest.fail(f"the run ended (status {proc.returncode}) before training:\n{err}")
        time.sleep(0.1)
    pytest.fail("the run did not start training")


def descendants(pid: int) -> list[int]:
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        found += children
        todo += children
    return found


def rank_pid(launcher: int, rank: int) -> int:
    """The pid of training rank `rank` below the launcher process."""
    for pid in descendants(launcher):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"bert.cli" in cmdline and f"RANK={rank}".encode() in environ:
            return pid
    pytest.fail(f"no rank {rank} below process {launcher}")


def alive(pids: list[int]) -> list[int]:
    def running(pid: int) -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False
    return [p for p in pids if running(p)]


def assert_aborted(lines, reason: str) -> dict:
    """Every line parsed and the last is run_stop, aborted, with `reason` in its reason; returns its metadata."""
    loglines, failed = lines
    assert not failed, f"lines that do not parse: {failed[:3]}"
    assert loglines, "no :::MLLOG lines"
    last = loglines[-1]
    assert last.key == "run_stop", [x.key for x in loglines[-5:]]
    metadata = last.value["metadata"]
    assert metadata["status"] == "aborted" and reason in metadata.get("reason", ""), metadata
    return metadata


def assert_log_aborted(log: Path, reason: str) -> dict:
    return assert_aborted(parse_file(str(log), DEFAULT_RULESET), reason)


def assert_stdout_aborted(stdout: str, reason: str) -> dict:
    return assert_aborted(parse_generator(stdout.splitlines()), reason)


def run_and_time(system: Path, logdir: Path, data: Path, env: dict, in_background: bool = False,
                 **extra: str) -> subprocess.Popen:
    """The wrapper, in a session of its own; `in_background`: started with `&` by a script (which prints its
    pid first and ends with its status), as a user's script starts it."""
    env = {**env, "NEXP": "1", "SEED": "3", "LOGDIR": str(logdir), "DATADIR": str(data), **extra}
    command = [str(REPO / "run_and_time.sh"), str(system)]
    if in_background:
        command = ["bash", "-c", '"$@" & echo $!; wait $!', "bash", *command]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def wrapper(system: str | Path, env: dict, timeout: float = 120, **popen) -> subprocess.CompletedProcess:
    """./run_and_time.sh SYSTEM to its end (bounded): a hang fails the test."""
    try:
        return subprocess.run([str(REPO / "run_and_time.sh"), str(system)], env=env, capture_output=True, text=True,
                              timeout=timeout, **popen)
    except subprocess.TimeoutExpired:
        pytest.fail(f"run_and_time.sh {system} still running after {timeout:.0f} s")


def fake_launcher(bin_dir: Path, body: str) -> dict:
    """A stand-in for the `env ... python -m torch.distributed.run ...` launch command of run_and_time.sh: a bash
    script named `env` whose body sees the run's --log-file as $log; returns the PATH that puts it first."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "env"
    script.write_text('#!/bin/bash\nwhile [[ $# -gt 0 && $1 != --log-file ]]; do shift; done\nlog="$2"\n'
                      f"{body}\n")
    script.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}


def page_cache_tools(bin_dir: Path, drops: bool, path: str | None = None) -> dict:
    """Stand-ins for `sysctl` and `sudo`, which drop the page cache before a run (bert.launch.plan.DROP_CACHES):
    both succeed without touching the cache (a machine shared with other work keeps it), or both fail, as for a
    user who is not root; returns the PATH that puts them first (before `path`, default this process's)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for tool in ("sysctl", "sudo"):
        (bin_dir / tool).write_text(f"#!/bin/sh\nexit {0 if drops else 1}\n")
        (bin_dir / tool).chmod(0o755)
    return {"PATH": f"{bin_dir}:{path or os.environ['PATH']}"}


def single_line_error(stderr: str) -> str:
    """The one line a refused input gives (no traceback, no second message)."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr[-3000:]
    return lines[0]
