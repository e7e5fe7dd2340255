"""Soak test (not part of CI): NEXP runs of one system through run_and_time.sh, watched for failed runs and
for what runs leave behind.

    python tests/soak/soak.py                      # NEXP=20 on cpu_tiny (hours on a CPU machine)
    python tests/soak/soak.py --system cpu_micro --nexp 2

While the runs go, it samples every --interval seconds the ranks of the current run (found by the log folder
in their command line, so also after a launcher died and left them behind): their resident memory and open
file descriptors. After each run (its RESULT line) it records the processes of earlier runs still alive, the
descriptors open in run_and_time.sh, the entries of /dev/shm and the system's available memory.

It reports, and exits 1 for: a run that failed (run_and_time's FAILED lines, a result whose run_stop is not
success or is missing), a process that outlived its run, descriptors or /dev/shm entries that grow across
runs, available memory that falls by more than --memory-tolerance-mib from the first run to the last, and a
rank whose descriptors grow within a run by more than --fd-growth. On a machine shared with other work the
memory figure is noisy: widen the tolerance there.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from compliance.result_log import read_result_log

REPO = Path(__file__).resolve().parents[2]


@dataclass
class RunSample:
    log: str  # the run's partial log, named in its processes' command lines
    peak_rss_mib: float = 0.0
    fds: dict[int, tuple[int, int]] = field(default_factory=dict)  # pid -> (first, peak) open descriptors

    def fd_growth(self) -> tuple[int, int, int]:
        """(growth, first, peak) of the process whose descriptors grew most."""
        return max(((peak - first, first, peak) for first, peak in self.fds.values()), default=(0, 0, 0))


@dataclass
class Between:
    leftover: list[int]
    launcher_fds: int
    shm: set[str]
    available_mib: float


@dataclass
class Soak:
    logdir: Path
    runs: list[RunSample] = field(default_factory=list)
    between: list[Between] = field(default_factory=list)


def _status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return dict(line.split(":", 1) for line in lines if ":" in line)


def run_processes(log: str) -> list[int]:
    """Live processes (launcher, ranks) whose command line names the log file `log`, so also ranks that
    outlived a launcher that died."""
    marker = b"--log-file\0" + log.encode() + b"\0"
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if marker in cmdline.read_bytes() and _status(int(cmdline.parent.name))["State"].split()[0] != "Z":
                found.append(int(cmdline.parent.name))
        except (OSError, KeyError):
            continue
    return found


def open_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def available_mib() -> float:
    meminfo = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    return int(meminfo["MemAvailable"].split()[0]) / 1024


def training(log: str) -> bool:
    """Whether the run has started (run_start in its log): descriptors are counted from then, when the ranks
    have opened what they keep open."""
    try:
        return "run_start" in Path(log).read_text(errors="replace")
    except OSError:
        return False


def sample_ranks(soak: Soak, stop: threading.Event, interval: float) -> None:
    while not stop.wait(interval):
        if not soak.runs or not training(soak.runs[-1].log):
            continue
        current = soak.runs[-1]
        for pid in run_processes(current.log):
            try:
                rss = int(_status(pid)["VmRSS"].split()[0]) / 1024
            except (OSError, KeyError):
                continue
            fds = open_fds(pid)
            current.peak_rss_mib = max(current.peak_rss_mib, rss)
            first, peak = current.fds.get(pid, (fds, fds))
            current.fds[pid] = (first, max(peak, fds))


def result_problems(logdir: Path) -> list[str]:
    problems = []
    for result in sorted(logdir.rglob("result_*.txt*")):
        events = read_result_log(result).events
        if not events or events[-1].key != "run_stop":
            problems.append(f"{result.name}: no run_stop at its end")
        elif events[-1].metadata.get("status") != "success":
            problems.append(f"{result.name}: {events[-1].metadata.get('status')} "
                            f"({events[-1].metadata.get('reason', 'no reason given')})")
    return problems


def leak_problems(soak: Soak, memory_tolerance_mib: float, fd_growth: int) -> list[str]:
    problems = []
    for i, b in enumerate(soak.between, 1):
        if b.leftover:
            problems.append(f"after run {i}: processes still alive: {b.leftover}")
    first, last = soak.between[0], soak.between[-1]
    if last.launcher_fds > first.launcher_fds:
        problems.append(f"run_and_time.sh holds {last.launcher_fds} descriptors, {first.launcher_fds} after run 1")
    if last.shm - first.shm:
        problems.append(f"/dev/shm entries that appeared and stayed: {sorted(last.shm - first.shm)}")
    if first.available_mib - last.available_mib > memory_tolerance_mib:
        problems.append(f"available memory fell by {first.available_mib - last.available_mib:.0f} MiB "
                        f"from run 1 to run {len(soak.between)}")
    for i, run in enumerate(soak.runs, 1):
        growth, first, peak = run.fd_growth()
        if growth > fd_growth:
            problems.append(f"run {i}: a process's open descriptors grew from {first} to {peak} during the run")
    return problems


def soak(system: str, nexp: int, logdir: Path, interval: float) -> tuple[Soak, int, str]:
    state = Soak(logdir)
    env = dict(os.environ, NEXP=str(nexp), LOGDIR=str(logdir), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([str(REPO / "run_and_time.sh"), system], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    stop = threading.Event()
    sampler = threading.Thread(target=sample_ranks, args=(state, stop, interval), daemon=True)
    sampler.start()
    output = []
    try:
        _follow(proc, state, interval, output)
    finally:
        if proc.poll() is None:  # the soak itself was stopped: stop the runs as a user's Ctrl-C would
            proc.terminate()
        code = proc.wait()
        stop.set()
        sampler.join()
    return state, code, "".join(output)


def _follow(proc: subprocess.Popen, state: Soak, interval: float, output: list[str]) -> None:
    """Reads run_and_time's output, taking the between-runs sample at each RESULT line."""
    for line in proc.stdout:
        output.append(line)
        if line.startswith("run_and_time: run ") and " log " in line:
            state.runs.append(RunSample(line.rsplit(" log ", 1)[1].strip() + ".partial"))
            print(line.rstrip(), flush=True)
        elif line.startswith("RESULT,bert,") and state.runs:
            run = state.runs[-1]
            deadline = time.monotonic() + 10 * interval  # the ranks' exits may trail the launcher's
            while run_processes(run.log) and time.monotonic() < deadline:
                time.sleep(interval / 4)
            shm = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
            state.between.append(Between(run_processes(run.log), open_fds(proc.pid), shm, available_mib()))
            growth, first, peak = run.fd_growth()
            print(f"  {line.strip()}  peak rank RSS {run.peak_rss_mib:.0f} MiB, descriptors {first} -> {peak}, "
                  f"available memory {state.between[-1].available_mib:.0f} MiB", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--system", default="cpu_tiny")
    parser.add_argument("--nexp", type=int, default=20)
    parser.add_argument("--logdir", type=Path, default=None, help="default: a new temporary folder")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between samples of the ranks")
    parser.add_argument("--memory-tolerance-mib", type=float, default=512.0)
    parser.add_argument("--fd-growth", type=int, default=16, help="descriptors a rank may add during a run")
    args = parser.parse_args()
    logdir = (args.logdir or Path(tempfile.mkdtemp(prefix="soak_"))).resolve()
    print(f"soak: {args.nexp} run(s) of {args.system}, results in {logdir}", flush=True)
    state, code, output = soak(args.system, args.nexp, logdir, args.interval)
    failed = [line.strip() for line in output.splitlines() if " FAILED " in line or "run(s) failed" in line]
    problems = failed + result_problems(logdir)
    if len(state.between) < args.nexp:
        problems.append(f"only {len(state.between)} of {args.nexp} runs reported a RESULT (run_and_time exit {code})"
                        f"; its last output:\n{output[-3000:]}")
    if state.between:
        problems += leak_problems(state, args.memory_tolerance_mib, args.fd_growth)
    print(f"soak: {len(state.between)} run(s), run_and_time exit status {code}")
    for problem in problems:
        print(f"soak: PROBLEM: {problem}")
    print("soak: no failed run, no leak found" if not problems else f"soak: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
