"""What the bucket-wise clip hook costs besides clipping, on 2 gloo ranks: it lists DDP's buckets (a zero copy
of the whole gradient) only twice in a run, each time before the model's forward has made any activation,
and the gradients live in DDP's buckets (no second copy); and the hook lets DDP go with the run (a reference from the
hook, which DDP's C++ reducer holds, kept DDP and its process group until the interpreter's finalisation, where
gloo's teardown aborted a finished rank now and then)."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import torch

from bert.data.shards import read_shard
from bert.distributed.launch import DistContext
from bert.model.pretraining import BertForPreTraining
from bert.optim.schedule import LrSchedule
from bert.step import TrainStep
from tests.helpers.clipping import clipping_system, micro_batch


class _CountingReducer:
    """DDP's reducer, noting each time its buckets are listed."""

    def __init__(self, reducer, events: list[str]):
        self._reducer, self._events = reducer, events

    def _get_zeros_like_grad_buckets(self):
        self._events.append("count")
        return self._reducer._get_zeros_like_grad_buckets()

    def __getattr__(self, name):
        return getattr(self._reducer, name)


def buckets_worker(rank: int, world_size: int, data_dir: Path) -> None:
    samples = read_shard(sorted((data_dir / "train").glob("*.hdf5"))[0])
    system = clipping_system(world_size, "bucketwise_before_allreduce", accumulate=2)
    ctx = DistContext(rank, world_size, rank, world_size, torch.device("cpu"))
    torch.manual_seed(0)
    model = BertForPreTraining(system.model_config())
    events: list[str] = []
    model.bert.embeddings.register_forward_pre_hook(lambda module, args: events.append("forward"))
    step = TrainStep(system.run, ctx, model, torch.optim.SGD(model.parameters(), lr=0.1),
                     LrSchedule(base_lr=0.1, decay_steps=10**9))
    step.ddp.reducer = _CountingReducer(step.ddp.reducer, events)
    for s in range(3):
        step(iter([micro_batch(samples, system, s, rank, k) for k in range(2)]), s)
    # Once before the first forward, once before the forward after DDP rebuilt its buckets; never again.
    assert events[:4] == ["count", "forward", "count", "forward"] and events.count("count") == 2, events
    assert step.clipping.num_buckets > 1

    out = step.ddp(**micro_batch(samples, system, 3, rank, 0).model_inputs(unpadded=True))
    out.loss.backward()
    storages = {p.grad.untyped_storage().data_ptr() for p in model.parameters()}
    assert len(storages) == step.clipping.num_buckets < len(list(model.parameters())), len(storages)

    ddp = weakref.ref(step.ddp)
    del step, out
    gc.collect()
    assert ddp() is None, "DDP outlives its run: something the garbage collector cannot see holds it"


def test_the_clip_hook_counts_buckets_twice_before_any_activation_grads_are_bucket_views_and_ddp_goes(
        spawn_ranks, small_dataset):
    spawn_ranks(buckets_worker, 2, small_dataset)
