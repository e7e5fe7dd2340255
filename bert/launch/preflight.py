"""The pre-flight: before any run starts (and before a result file is claimed), every node checks what the run
needs: the device and the torch build, the dataset, the checkpoint (run.init_checkpoint) and the results folder.

`preflight(descriptor, node, master_addr, data_dir, log_dir, checkpoint_dir, gpus_needed)` returns an `Outcome`:
the problems this node prints, one line each naming the node and the fix, or the line that the start goes on.
On one node it checks this node alone. On several, every node gathers its facts (bert.launch.node_facts) and
reports them to node 0 on the rendezvous port (bert.launch.rendezvous); node 0 judges them all and sends back
the verdict. Each side waits at most run.launch.preflight_timeout_s.
What each check saves a run from: docs/running.md, "On a cluster".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bert.launch.node_facts import judge, node_facts
from bert.launch.plan import launch_env
from bert.launch.rendezvous import collect, report
from bert.system import Descriptor


@dataclass(frozen=True)
class Outcome:
    """What this node prints: the problems it must show (node 0: all of them; another node: those naming it, or
    one line saying that node 0 refused the start), or, when there are none, one line that the start goes on."""

    problems: list[str]
    ready: str


def preflight(system: Descriptor, node: int, master_addr: str, data_dir: Path | None, log_dir: Path,
              checkpoint_dir: Path | None = None, gpus_needed: int | None = None) -> Outcome:
    """The pre-flight of `node` (see the module's description). `gpus_needed`: the GPUs a CUDA run needs to see
    on this node (default: one per process of the node)."""
    launch = system.run.launch
    gpus = system.run.processes_per_node if gpus_needed is None else gpus_needed
    facts = node_facts(system, node, master_addr, data_dir, log_dir, checkpoint_dir, gpus)
    if system.nodes == 1:
        problems = judge({0: facts}, {0: facts.sent_at}, 1, 0, master_addr, launch.master_port)
        checkpoint = system.init_checkpoint_path(checkpoint_dir)
        return Outcome(problems, f"ready: torch {facts.torch} ({system.run.device}), dataset {facts.dataset_summary}"
                                 + (f", checkpoint {checkpoint}" if checkpoint else "") + f", results in {log_dir}")
    if node == 0:
        problems, agreed = collect(facts, system.nodes, master_addr, launch.master_port, launch.preflight_timeout_s)
        interface = launch_env(system.run.launch, "torchrun", master_addr).get("GLOO_SOCKET_IFNAME")
        agreed.append(f"interface {interface}" if interface else "gloo on the address of each host's name")
        return Outcome(problems, f"{system.nodes} node(s) ready: {', '.join(agreed)}")
    problems = report(facts, master_addr, launch.master_port, launch.preflight_timeout_s)
    mine = [p for p in problems if p.startswith(f"node {node} ")]
    if problems and not mine:
        mine = [f"node {node} ({facts.host}): node 0 refused the start for {len(problems)} problem(s) of other "
                "nodes, which node 0's output names"]
    return Outcome(mine, f"node {node} ({facts.host}): node 0 at {master_addr}:{launch.master_port} accepts the start")
