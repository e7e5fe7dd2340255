"""fp16 loss scaling with every clipping mode: an overflow on one rank skips the step on all ranks."""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.distributed as dist

from bert.data.shards import read_shard
from bert.distributed.clipping import CLIP_MODES
from bert.distributed.launch import DistContext
from bert.model.pretraining import BertForPreTraining
from bert.optim.schedule import LrSchedule
from bert.step import TrainStep
from tests.helpers.clipping import clipping_system, micro_batch


def flat_params(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def overflow_once():
    fired = []

    def hook(grad: torch.Tensor) -> torch.Tensor:
        if fired:
            return grad
        fired.append(True)
        return grad * math.inf

    return hook


def overflow_worker(rank: int, world_size: int, data_dir: Path) -> None:
    samples = read_shard(sorted((data_dir / "train").glob("*.hdf5"))[0])
    for mode in CLIP_MODES:
        system = clipping_system(world_size, mode, accumulate=2, precision="fp16")
        ctx = DistContext(rank, world_size, rank, world_size, torch.device("cpu"))
        torch.manual_seed(0)
        model = BertForPreTraining(system.model_config())
        step = TrainStep(system.run, ctx, model, torch.optim.SGD(model.parameters(), lr=1.0),
                         LrSchedule(base_lr=1.0, decay_steps=10**9))
        scale = step.scaler.get_scale()
        start = flat_params(model)
        if rank == 1:  # one parameter's gradient overflows, in the first micro-batch of rank 1 only
            model.bert.encoder[0].attention.qkv.weight.register_hook(overflow_once())
        step(iter([micro_batch(samples, system, 0, rank, k) for k in range(2)]), 0)
        assert torch.equal(flat_params(model), start), f"{mode}: rank {rank} stepped on an overflowed gradient"
        assert step.scaler.get_scale() == scale / 2, f"{mode}: rank {rank} did not lower the loss scale"

        step(iter([micro_batch(samples, system, 1, rank, k) for k in range(2)]), 1)
        after = flat_params(model)
        assert torch.isfinite(after).all() and not torch.equal(after, start), f"{mode}: the clean step did not run"
        gathered = [torch.empty_like(after) for _ in range(world_size)]
        dist.all_gather(gathered, after)
        assert all(torch.equal(g, gathered[0]) for g in gathered), f"{mode}: the ranks' weights diverged"


def test_overflow_on_one_rank_skips_the_step_on_all(spawn_ranks, small_dataset):
    spawn_ranks(overflow_worker, 2, small_dataset)
