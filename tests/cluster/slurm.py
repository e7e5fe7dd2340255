"""A real Slurm cluster for the tests (tests/cluster/slurm_local.sh): its daemons on this host, or each on a host
of its own (tests/cluster/netns.py); and the job handling the tests share: submit, wait, read a job's state."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cluster.netns import Host, HostNetwork

SCRIPT = Path(__file__).resolve().parent / "slurm_local.sh"
NODES = 2  # two slurmd on this host (Debian's slurm-wlm is built with multiple-slurmd support)
TOOLS = ("slurmctld", "slurmd", "sbatch", "munged")  # what the tests run; `install` provides them
INSTALL_TIMEOUT_S = 900  # the script waits up to 300 s for each of apt's locks, then installs


def ensure_installed() -> None:
    """Installs slurm-wlm and munge where they are missing and this process may (root, apt-get); otherwise
    skips the test with the reason."""
    if all(shutil.which(tool) for tool in TOOLS):
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip("Slurm is not installed and cannot be here (needs root and apt-get): "
                    f"{SCRIPT} install, then run the tests again")
    done = subprocess.run([str(SCRIPT), "install"], capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    if done.returncode != 0:
        pytest.fail(f"installing slurm-wlm and munge failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")


@dataclass(frozen=True)
class Job:
    id: str
    fields: dict[str, str]

    @property
    def state(self) -> str:
        return self.fields["JobState"]

    @property
    def exit_code(self) -> str:
        """Slurm's `<status>:<signal>` of the batch script."""
        return self.fields["ExitCode"]


@dataclass(frozen=True)
class SlurmCluster:
    folder: Path
    env: dict[str, str]  # os.environ with SLURM_CONF: what sbatch, squeue and scancel need
    controller: Host | None = None  # where the client commands run: slurmctld's host, when it has one

    def run(self, *args: str, **kwargs) -> subprocess.CompletedProcess:
        argv = self.controller.command(list(args)) if self.controller else list(args)
        return subprocess.run(argv, env=kwargs.pop("env", self.env), capture_output=True, text=True,
                              timeout=kwargs.pop("timeout", 60), **kwargs)

    def submit(self, *args: str, env: dict[str, str], cwd: Path) -> str:
        """sbatch (or a script that calls it) with `args`; the job id."""
        done = self.run(*args, env={**env, "SLURM_CONF": self.env["SLURM_CONF"]}, cwd=cwd, timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return done.stdout.split()[-1]  # "Submitted batch job <id>"

    def job(self, job_id: str) -> Job:
        done = self.run("scontrol", "show", "job", "--oneliner", job_id)
        assert done.returncode == 0, done.stderr
        fields = dict(f.split("=", 1) for f in done.stdout.split() if "=" in f)
        return Job(job_id, fields)

    def wait(self, job_id: str, timeout: float) -> Job:
        """The job once it has ended; cancels it and fails the test if it runs past `timeout`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            job = self.job(job_id)
            if job.state not in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING"):
                return job
            time.sleep(0.5)
        self.run("scancel", job_id)
        nodes = self.run("sinfo", "--Node", "--long").stdout
        pytest.fail(f"job {job_id} still {job.state} ({job.fields.get('Reason')}) after {timeout:.0f} s:\n{nodes}")


@contextmanager
def slurm_cluster(folder: Path, nodes: int = NODES, network: HostNetwork | None = None) -> Iterator[SlurmCluster]:
    """A started cluster; stopped afterwards whatever happened (start stops what it began if it fails). On a
    `network`, slurmctld runs on its first host and a slurmd on each other one (`nodes` is then theirs)."""
    ensure_installed()
    shape = str(nodes)
    if network is not None:
        shape = str(folder.with_name(f"{folder.name}.hosts"))
        Path(shape).write_text("".join(f"{h.name} {h.address} {h.netns}\n" for h in network.hosts))
    started = subprocess.run([str(SCRIPT), "start", str(folder), shape], capture_output=True, text=True,
                             timeout=120)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield SlurmCluster(folder, dict(os.environ, SLURM_CONF=str(folder / "slurm.conf")),
                           network.hosts[0] if network else None)
    finally:
        subprocess.run([str(SCRIPT), "stop", str(folder)], capture_output=True, timeout=120)
