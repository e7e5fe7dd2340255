"""Which GPU a rank takes: its local rank modulo the GPUs it sees (a cluster that binds one GPU per task shows
each task one, as cuda:0), and the launch plan names the same device for every rank."""

import os

import pytest
import torch

from bert.distributed.launch import LaunchError, cuda_device_index, init_distributed
from bert.launch.plan import TrainArgs, build_plan, describe
from bert.system import load_descriptor


def _slurm_task(monkeypatch, local_id: int, gpus: int) -> list[torch.device]:
    """One Slurm task with local id `local_id` on a machine whose torch sees `gpus` GPUs; returns the devices
    torch.cuda.set_device is given."""
    monkeypatch.setattr(os, "environ", {"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_LOCALID": str(local_id)})
    chosen = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: chosen.append(torch.device(device)))
    return chosen


@pytest.mark.parametrize("gpus, expected", [(1, 0), (8, 3), (2, 1)])
def test_a_rank_takes_its_local_rank_modulo_the_gpus_it_sees(monkeypatch, gpus, expected):
    chosen = _slurm_task(monkeypatch, local_id=3, gpus=gpus)
    ctx = init_distributed("cuda", timeout_s=10)
    assert ctx.local_rank == 3 and ctx.device == torch.device("cuda", expected)
    assert chosen == [torch.device("cuda", expected)]


def test_a_rank_that_sees_no_gpu_is_told_so():
    with pytest.raises(LaunchError, match="local rank 2 sees no CUDA device"):
        cuda_device_index(2, 0)


def test_the_plan_names_each_ranks_device(tmp_path):
    system = load_descriptor("dgxa100_1x8")
    plan = build_plan(system, TrainArgs(5, tmp_path / "log.txt", tmp_path), "torchrun", 0)
    assert [slot.device for slot in plan.ranks] == [f"cuda:{k}" for k in range(8)]
    lines = describe(plan, system, 0)
    assert any(line.startswith("devices: each rank takes cuda:<local rank mod the GPUs it sees>") for line in lines)
    assert "  rank 7 node 0 local 7 group 0 device cuda:7 shards -" in lines
    one_gpu = system.variant(description={"accelerators_per_node": "1"})  # one GPU bound per task
    assert {slot.device for slot in build_plan(one_gpu, TrainArgs(5, tmp_path / "l", tmp_path), "torchrun", 0).ranks} \
        == {"cuda:0"}
    cpu = load_descriptor("cpu_micro")
    assert [slot.device for slot in build_plan(cpu, TrainArgs(5, tmp_path / "l", tmp_path), "torchrun", 0).ranks] \
        == ["cpu"]
