"""The launch plan: what run_and_time.sh --dry-run prints and what it starts."""

import os
import subprocess

from bert.distributed.plan import TrainArgs, build_plan, launch_command
from bert.system import load_system
from tests.helpers.repo import REPO


def _dry_run(system: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / "run_and_time.sh"), "--dry-run", system], env=dict(os.environ, SEED="5", **env),
                          capture_output=True, text=True, timeout=300)


def test_dry_run_of_the_papers_system_under_slurm(tmp_path):
    proc = _dry_run("dgxa100_128x8_adam", SLURM_JOB_ID="77", MASTER_ADDR="node001", LOGDIR=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert "= 1024 ranks" in lines[0] and "16 per rank" in lines[0]
    assert any("128 node group(s) for presorting" in line for line in lines)
    assert any("DDP communication hook BucketwiseBeforeAllreduce" in line for line in lines)
    srun = next(line for line in lines if line.startswith("command"))
    assert "srun --nodes=128 --ntasks-per-node=8 --kill-on-bad-exit=1 python -m bert.cli train" in srun
    assert "--seed 5" in srun
    assert "env: MASTER_ADDR=node001" in lines and "env: NCCL_IB_HCA=mlx5" in lines
    ranks = [line.split() for line in lines if line.startswith("  rank ")]
    assert len(ranks) == 1024
    assert ranks[-1][:8] == ["rank", "1023", "node", "127", "local", "7", "group", "127"]
    assert not (tmp_path / "dgxa100_128x8_adam").exists()  # nothing started, nothing written


def test_plain_hosts_need_the_node_rank_and_each_node_gets_its_command(tmp_path):
    refused = _dry_run("dgxa100_8x8")
    assert refused.returncode == 2 and "NODE_RANK" in refused.stderr and "MASTER_ADDR" in refused.stderr
    system = load_system("dgxa100_8x8")
    plan = build_plan(system, TrainArgs(5, tmp_path / "log.txt", tmp_path), "torchrun", 0, master_addr="host0")
    assert len(plan.commands) == 8 and len(plan.ranks) == 64
    assert "--nnodes=8 --node_rank=3 --master_addr=host0 --master_port=29500 --nproc_per_node=8" in " ".join(
        plan.commands[3])
    assert plan.env["NCCL_IB_HCA"] == "mlx5" and "MASTER_ADDR" not in plan.env  # torchrun passes its own


def test_every_shard_goes_to_exactly_one_rank(tmp_path, small_dataset):
    system = load_system("cpu_micro").variant({"processes_per_node": 2})
    plan = build_plan(system, TrainArgs(9, tmp_path / "log.txt", small_dataset), "torchrun", num_shards=4)
    assert [(s.rank, s.node, s.local_rank, s.group) for s in plan.ranks] == [(0, 0, 0, 0), (1, 0, 1, 0)]
    dealt = sorted(i for slot in plan.ranks for i in slot.shards)
    assert dealt == [0, 1, 2, 3] and all(len(slot.shards) == 2 for slot in plan.ranks)
    single = launch_command(system, TrainArgs(9, tmp_path / "log.txt", small_dataset), "torchrun")
    assert single[:6] == ["python", "-m", "bert.distributed.torchrun", "--standalone", "--nnodes=1",
                          "--nproc_per_node=2"]


def test_one_process_starts_without_the_torchrun_agent(tmp_path, small_dataset):
    system = load_system("cpu_micro").variant({"processes_per_node": 1})
    command = launch_command(system, TrainArgs(9, tmp_path / "log.txt", small_dataset), "torchrun")
    assert command[:4] == ["python", "-m", "bert.cli", "train"] and "torch.distributed.run" not in command
