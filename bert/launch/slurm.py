"""A Slurm allocation against a descriptor: the shape to ask for, the check that a job got it, the host of the
rendezvous, and whether the job's time limit lets its runs end.

run_and_time.sbatch asks for the descriptor's shape (`sbatch_options`); run_and_time.sh, inside the job,
refuses an allocation that cannot run it (`allocation_problem`) before anything starts, with one line that
names the fix, and puts the rendezvous at the first node of the allocation (`first_node_address`). The time
limit (`--time`, the job's TimeLimit, or the batch script's own) is compared with NEXP x the predicted length
of a run (`time_check_line`) at submission and in the dry run. Nothing here reads the environment: the caller
passes the job's variables.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from bert.system import Descriptor

# Slurm's per-node counts read like "8", "8(x16)" or "72(x2),36": a value, and how many nodes have it.
_COUNT = re.compile(r"(\d+)(?:\(x(\d+)\))?")


def sbatch_options(system: Descriptor) -> list[str]:
    """What `sbatch` must ask for: the descriptor's nodes, one task per process, and a GPU per CUDA process."""
    per_node = system.run.processes_per_node
    options = [f"--nodes={system.nodes}", f"--ntasks-per-node={per_node}"]
    if system.run.device == "cuda":
        options.append(f"--gpus-per-node={per_node}")
    return options


def per_node_counts(value: str) -> list[int]:
    """Slurm's compressed per-node list ("72(x2),36") as one count per node ([72, 72, 36])."""
    counts = []
    for part in value.split(","):
        match = _COUNT.fullmatch(part.strip())
        if match is None:
            raise ValueError(f"{value!r} is not a Slurm per-node count list like '8(x2),4'")
        counts += [int(match.group(1))] * int(match.group(2) or 1)
    return counts


@dataclass(frozen=True)
class Allocation:
    """What a job was given, from its SLURM_* variables; None where the job's environment does not say."""

    nodes: int | None
    tasks_per_node: int | None  # only when the job asked for a count per node
    cpus_per_node: list[int] | None
    gpus_per_node: int | None  # only when the job asked for GPUs
    nodelist: str | None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Allocation:
        def number(name: str) -> int | None:
            value = env.get(name)
            return per_node_counts(value)[0] if value else None

        cpus = env.get("SLURM_JOB_CPUS_PER_NODE")
        return cls(number("SLURM_JOB_NUM_NODES"), number("SLURM_NTASKS_PER_NODE"),
                   per_node_counts(cpus) if cpus else None, number("SLURM_GPUS_ON_NODE"),
                   env.get("SLURM_JOB_NODELIST") or None)


def allocation_problem(system: Descriptor, allocation: Allocation, label: str | None = None) -> str | None:
    """Why this allocation cannot run the descriptor (one line with the fix), or None when it can. `label` names
    the descriptor in the fix as the user gave it (a name in systems/ or a path; default: its name)."""
    per_node, label = system.run.processes_per_node, label or system.name
    if allocation.nodes is not None and allocation.nodes != system.nodes:
        found = f"{allocation.nodes} node(s) but {system.name} describes {system.nodes}"
    elif allocation.tasks_per_node is not None and allocation.tasks_per_node != per_node:
        found = f"{allocation.tasks_per_node} task(s) per node but {system.name} runs {per_node} process(es) per node"
    elif allocation.cpus_per_node and min(allocation.cpus_per_node) < per_node:
        found = (f"{min(allocation.cpus_per_node)} CPU(s) on a node, too few for the {per_node} process(es) per "
                 f"node of {system.name}")
    elif system.run.device == "cuda" and allocation.gpus_per_node is not None and allocation.gpus_per_node < per_node:
        found = (f"{allocation.gpus_per_node} GPU(s) per node, too few for the {per_node} process(es) per node "
                 f"of {system.name} (one GPU each)")
    else:
        return None
    return (f"the allocation has {found}; submit with ./run_and_time.sbatch {label} "
            f"(or: sbatch {' '.join(sbatch_options(system))} run_and_time.sbatch {label})")


Scontrol = Callable[[list[str]], str]


def _scontrol(args: list[str]) -> str:
    return subprocess.run(["scontrol", *args], check=True, capture_output=True, text=True).stdout


def first_node_address(nodelist: str, scontrol: Scontrol = _scontrol) -> str:
    """The address of the allocation's first node (where srun puts rank 0, whose store the others meet at):
    its NodeAddr as Slurm knows it, which is its name unless the cluster says otherwise."""
    first = scontrol(["show", "hostnames", nodelist]).split()[0]
    for field in scontrol(["show", "node", "--oneliner", first]).split():
        if field.startswith("NodeAddr="):
            return field.removeprefix("NodeAddr=")
    return first


# Slurm's time formats: minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes and
# days-hours:minutes:seconds.
_TIME = re.compile(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?")
UNLIMITED = ("UNLIMITED", "INFINITE")
TIME_MARGIN = 1.25  # the limit asked for: the runs' predicted length, plus a quarter for start-up and the model's error


def time_limit_seconds(text: str) -> int | None:
    """A Slurm time limit in seconds; None for no limit. Raises ValueError for text Slurm would not take."""
    if text.upper() in UNLIMITED:
        return None
    match = _TIME.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a Slurm time limit like 120, 2:00:00 or 1-12:00:00")
    days, first, second, third = (int(g) if g else None for g in match.groups())
    if days is not None:  # days-hours[:minutes[:seconds]]
        return ((days * 24 + first) * 60 + (second or 0)) * 60 + (third or 0)
    if third is not None:  # hours:minutes:seconds
        return (first * 60 + second) * 60 + third
    return first * 60 + (second or 0)  # minutes[:seconds]


def slurm_time(seconds: float) -> str:
    """`seconds` (rounded up to a minute) as Slurm writes a time limit: [days-]hours:minutes:seconds."""
    minutes = -(-int(seconds) // 60)
    days, minutes = divmod(minutes, 24 * 60)
    clock = f"{minutes // 60}:{minutes % 60:02d}:00"
    return f"{days}-{clock}" if days else clock


def time_option(sbatch_args: list[str]) -> str | None:
    """The time limit that sbatch options ask for (the last --time/-t), or None."""
    found = None
    for i, arg in enumerate(sbatch_args):
        if arg in ("--time", "-t") and i + 1 < len(sbatch_args):
            found = sbatch_args[i + 1]
        elif arg.startswith("--time="):
            found = arg.removeprefix("--time=")
        elif arg.startswith("-t") and len(arg) > 2 and not arg.startswith("--"):
            found = arg[2:]
    return found


def time_check_line(runs: int, run_s: float | None, limit: str, limit_source: str, why_none: str = "",
                    counted: str = "start-up included") -> str:
    """The dry run's and the submission's comparison of the job's time limit with NEXP x the predicted length of a
    run end to end (`counted` says what of its untimed start the prediction includes)."""
    if run_s is None:
        return f"time: no prediction of a run's length ({why_none}); the job's time limit is {limit} ({limit_source})"
    total = runs * run_s
    said = (f"time: NEXP={runs} run(s) x {run_s / 60:.1f} min predicted (mlperf-bert simulate; {counted}) = "
            f"{total / 60:.1f} min")
    limit_s = time_limit_seconds(limit)
    if limit_s is None or total <= limit_s:
        return f"{said}, within the job's time limit {limit} ({limit_source})"
    return (f"{said}, MORE than the job's time limit {limit} ({limit_source}): Slurm would end the job after about "
            f"{int(limit_s // run_s)} run(s); pass --time={slurm_time(total * TIME_MARGIN)} to run_and_time.sbatch, "
            "or lower NEXP")


_SBATCH_TIME = re.compile(r"^#SBATCH\s+(?:--time[=\s]|-t\s*)(\S+)", re.MULTILINE)


def script_time_limit(script_text: str) -> str | None:
    """The time limit a batch script's own #SBATCH lines ask for, or None."""
    found = _SBATCH_TIME.findall(script_text)
    return found[-1] if found else None


def job_time_limit(job_id: str, scontrol: Scontrol = _scontrol) -> str | None:
    """A running job's TimeLimit as Slurm states it, or None when Slurm does not know the job."""
    try:
        fields = scontrol(["show", "job", "--oneliner", job_id]).split()
    except (OSError, subprocess.CalledProcessError):
        return None
    return next((f.removeprefix("TimeLimit=") for f in fields if f.startswith("TimeLimit=")), None)
