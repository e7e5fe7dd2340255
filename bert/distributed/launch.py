"""Process-group set-up from the launcher's environment: torchrun, Slurm `srun`, or a single process.

This is the only module that reads rank and world size from the environment.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist


class LaunchError(RuntimeError):
    """The environment does not describe a usable launch; the message says which variable and the fix."""


@dataclass(frozen=True)
class DistContext:
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def node_rank(self) -> int:
        return self.rank // self.local_world_size

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def _env_int(name: str) -> int:
    value = os.environ[name]
    try:
        return int(value)
    except ValueError:
        raise LaunchError(f"environment variable {name}={value!r} is not an integer") from None


def launch_environment() -> tuple[int, int, int, int]:
    """(rank, world size, local rank, local world size) from torchrun or Slurm; (0, 1, 0, 1) otherwise."""
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        local_world = os.environ.get("LOCAL_WORLD_SIZE", os.environ["WORLD_SIZE"])
        return (_env_int("RANK"), _env_int("WORLD_SIZE"), int(os.environ.get("LOCAL_RANK", "0")),
                int(local_world))
    if "SLURM_PROCID" in os.environ and "SLURM_NTASKS" in os.environ:
        rank, world = _env_int("SLURM_PROCID"), _env_int("SLURM_NTASKS")
        # SLURM_NTASKS_PER_NODE reads like "8" or "8(x16)"; one task per GPU gives the same count everywhere.
        per_node = os.environ.get("SLURM_NTASKS_PER_NODE", str(world)).split("(")[0]
        os.environ.setdefault("RANK", str(rank))
        os.environ.setdefault("WORLD_SIZE", str(world))
        return rank, world, int(os.environ.get("SLURM_LOCALID", "0")), int(per_node)
    return 0, 1, 0, 1


def cuda_device_index(local_rank: int, visible: int) -> int:
    """The GPU a rank takes among the `visible` ones it sees: its local rank modulo their number. A node whose
    ranks each see all its GPUs gives rank k GPU k; a cluster that binds one GPU per task (every task sees its
    own as cuda:0) gives every rank cuda:0."""
    if visible < 1:
        raise LaunchError(f"local rank {local_rank} sees no CUDA device (CUDA_VISIBLE_DEVICES, or the scheduler's "
                          "GPU binding, hides them all)")
    return local_rank % visible


def init_distributed(device_kind: str, timeout_s: float) -> DistContext:
    """Joins the process group (gloo on CPU, NCCL on CUDA) and picks this process's device."""
    rank, world, local_rank, local_world = launch_environment()
    if device_kind == "cuda":
        if not torch.cuda.is_available():
            raise LaunchError("the descriptor asks for device cuda but torch sees no CUDA device "
                              f"(torch {torch.__version__}); use a CPU descriptor or a CUDA build of torch")
        device = torch.device("cuda", cuda_device_index(local_rank, torch.cuda.device_count()))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    if world > 1:
        for name in ("MASTER_ADDR", "MASTER_PORT"):
            if name not in os.environ:
                raise LaunchError(f"{name} is not set; torchrun sets it, and under Slurm run_and_time.sh "
                                  "sets it from the first host of the allocation")
        dist.init_process_group(
            backend="nccl" if device_kind == "cuda" else "gloo", init_method="env://", rank=rank,
            world_size=world, timeout=timedelta(seconds=timeout_s),
            device_id=device if device_kind == "cuda" else None,
        )
    return DistContext(rank, world, local_rank, local_world, device)


def wait_for_all(ctx: DistContext) -> None:
    """Returns once every rank has called it (a barrier, on this rank's GPU under NCCL); at once alone."""
    if ctx.distributed:
        dist.barrier(device_ids=[ctx.device.index] if ctx.device.type == "cuda" else None)


def rendezvous_store(timeout_s: float) -> dist.Store:
    """A client of the store the ranks met at (torchrun's, or rank 0's under Slurm), for bert.distributed.liveness."""
    return dist.TCPStore(os.environ["MASTER_ADDR"], _env_int("MASTER_PORT"), is_master=False,
                         timeout=timedelta(seconds=timeout_s))


def rank0_value(value: int, ctx: DistContext) -> int:
    """Rank 0's `value`, on every rank (a broadcast; alone, the value itself)."""
    if not ctx.distributed:
        return value
    tensor = torch.tensor([value], dtype=torch.int64, device=ctx.device)
    dist.broadcast(tensor, src=0)
    return int(tensor.item())


def nodes_without(flag: bool, ctx: DistContext) -> list[int]:
    """The nodes whose ranks passed False (each rank passes its node's answer), on every rank: what one node's
    launcher did on its own host (dropping the page cache), gathered for rank 0 to log for all of them."""
    missing = torch.zeros(ctx.world_size, dtype=torch.int64, device=ctx.device)
    missing[ctx.rank] = int(not flag)
    all_reduce_sum(missing, ctx)
    return sorted({rank // ctx.local_world_size for rank in missing.nonzero().flatten().tolist()})


def all_reduce_sum(tensor: torch.Tensor, ctx: DistContext) -> torch.Tensor:
    if ctx.distributed:
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor


def shutdown(ctx: DistContext) -> None:
    if ctx.distributed and dist.is_initialized():
        dist.destroy_process_group()
