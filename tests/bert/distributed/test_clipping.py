"""Gradient clipping (bert.distributed.clipping): clipping a set of tensors to a norm, each clipping mode of the
step on 2 gloo ranks against a direct computation on the same gradients, with the gradient sent in fp32 and in
bf16 (run.grad_comm_dtype: equal within bf16's rounding), and fp16 loss scaling with every mode (an overflow on
one rank skips the step on all ranks).

Every rank runs TrainStep with SGD at learning rate 1, so the update is minus the final gradient, and also
computes every rank's local micro-batch gradients on its own copy of the model; the expected update of each
mode is then computed from those in float64. The bucket-wise expectation uses the buckets DDP actually
reduced in each backward, seen through a spy on the hook.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from unittest import mock

import pytest
import torch
import torch.distributed as dist

from bert.data.batch import Batch
from bert.data.shards import Samples, read_shard
from bert.distributed.clip_hook import BucketwiseBeforeAllreduce
from bert.distributed.clip_kinds import CLIP_KINDS
from bert.distributed.clipping import clip_to_norm_
from bert.distributed.launch import DistContext
from bert.model.pretraining import BertForPreTraining
from bert.optim.schedule import LrSchedule
from bert.step import TrainStep
from bert.system import Descriptor
from tests.helpers.clipping import CLIP_NORM, clipping_system, micro_batch

STEPS = 2


def test_scales_down_to_the_bound_and_leaves_small_gradients_alone():
    a, b = torch.tensor([3.0, 0.0]), torch.tensor([[4.0]])
    norm = clip_to_norm_([a, b], 1.0)
    assert norm.item() == pytest.approx(5.0)
    assert a.tolist() == pytest.approx([0.6, 0.0]) and b.item() == pytest.approx(0.8)
    small = torch.tensor([0.3, 0.4])
    clip_to_norm_([small], torch.tensor(1.0))
    assert small.tolist() == pytest.approx([0.3, 0.4])
    zero = torch.zeros(3)
    clip_to_norm_([zero], 1.0)
    assert torch.equal(zero, torch.zeros(3))


@pytest.mark.parametrize("values", [[math.inf, 1.0], [math.nan, 1.0], [3e38, 3e38]])
def test_a_non_finite_norm_leaves_the_gradient_non_finite(values):
    # The last case has finite entries whose squares overflow: scaling by bound / inf would zero them.
    g = torch.tensor(values)
    clip_to_norm_([g], 1.0)
    assert not torch.isfinite(g).all()


def local_grads(model: torch.nn.Module, system: Descriptor, batch: Batch, scale: float) -> list[torch.Tensor]:
    """The gradient of one micro-batch as the step computes it: loss / accumulate, times the loss scale."""
    model.zero_grad(set_to_none=True)
    precision = system.run.precision
    with torch.autocast("cpu", dtype=torch.float16, enabled=precision == "fp16"):
        out = model(**batch.model_inputs(unpadded=True))
    (out.loss / system.run.gradient_accumulation_steps * scale).backward()
    return [p.grad.double() / scale for p in model.parameters()]


def clipped(tensors: list[torch.Tensor], bound: float) -> list[torch.Tensor]:
    norm = math.sqrt(sum(float(t.pow(2).sum()) for t in tensors))
    return [t * min(1.0, bound / norm) for t in tensors]


def expected_update(mode: str, local: list[list[list[torch.Tensor]]], buckets: list[list[list[int]]]) -> list:
    """local[rank][micro] = per-parameter gradients; buckets[micro] = the parameter indices of each bucket."""
    world, accumulate = len(local), len(local[0])
    if mode == "after_allreduce":
        return clipped([sum(local[r][k][i] for r in range(world) for k in range(accumulate)) / world
                        for i in range(len(local[0][0]))], CLIP_NORM)
    per_rank = []
    for r in range(world):
        if mode == "before_allreduce":
            per_rank.append(clipped([sum(g[i] for g in local[r]) for i in range(len(local[r][0]))], CLIP_NORM))
            continue
        total = [torch.zeros_like(g) for g in local[r][0]]
        for k, grads in enumerate(local[r]):
            bound = CLIP_NORM / (accumulate * math.sqrt(len(buckets[k])))
            for bucket in buckets[k]:
                for i, g in zip(bucket, clipped([grads[i] for i in bucket], bound)):
                    total[i] += g
        per_rank.append(total)
    return [sum(p[i] for p in per_rank) / world for i in range(len(per_rank[0]))]


def run_mode(rank: int, samples: Samples, system: Descriptor) -> list[list[torch.Tensor]]:
    """Runs STEPS steps; checks each update against the expectation; returns all modes' expectations."""
    ctx = DistContext(rank, system.world_size, rank, system.world_size, torch.device("cpu"))
    torch.manual_seed(0)
    model = BertForPreTraining(system.model_config())
    reference = copy.deepcopy(model)
    index_of = {p: i for i, p in enumerate(model.parameters())}
    seen: list[list[list[int]]] = []
    original = BucketwiseBeforeAllreduce._clip_and_reduce

    def spy(self, state, bucket):
        if bucket.index() == 0:
            seen.append([])
        seen[-1].append([index_of[p] for p in bucket.parameters()])
        return original(self, state, bucket)

    with mock.patch.object(BucketwiseBeforeAllreduce, "_clip_and_reduce", spy):
        step = TrainStep(system.run, ctx, model, torch.optim.SGD(model.parameters(), lr=1.0),
                         LrSchedule(base_lr=1.0, decay_steps=10**9))
    accumulate, world = system.run.gradient_accumulation_steps, system.world_size
    for s in range(STEPS):
        batches = [[micro_batch(samples, system, s, r, k) for k in range(accumulate)] for r in range(world)]
        reference.load_state_dict(model.state_dict())
        scale = step.scaler.get_scale() if step.scaler.is_enabled() else 1.0
        local = [[local_grads(reference, system, b, scale) for b in row] for row in batches]
        before = [p.detach().double().clone() for p in model.parameters()]
        seen.clear()
        step(iter(batches[rank]), s)
        if system.run.clip == "bucketwise_before_allreduce":
            assert len(seen) == accumulate and all(len(b) == step.clipping.num_buckets for b in seen[-1:]), \
                f"hook saw buckets {[len(b) for b in seen]}, clip bound assumed {step.clipping.num_buckets}"
        buckets = seen or [[list(range(len(before)))]] * accumulate
        expected = {mode: expected_update(mode, local, buckets) for mode in CLIP_KINDS}
        actual = [b - p.detach().double() for b, p in zip(before, model.parameters())]
        # What one rank sends of each tensor, at most (clipping only shrinks it): bf16 rounds each of those.
        shares = [max(sum(g[i].abs() for g in row).max() for row in local) / world for i in range(len(before))]
        check_update(system, s, dict(model.named_parameters()), actual, expected[system.run.clip], shares)
    return list(expected.values())


def check_update(system: Descriptor, step: int, names: list[str], actual: list[torch.Tensor],
                 expected: list[torch.Tensor], shares: list[torch.Tensor]) -> None:
    """fp32 communication: the expectation to float tolerance. bf16: each rank's share (at most `shares` of
    each tensor) is rounded to bf16 (8 significant bits) before the sum and the sum again, so the update is
    within 2^-7 of the largest share, and not to float tolerance (the bf16 path really rounds)."""
    bf16 = system.run.grad_comm_dtype == "bf16"
    rounded = 0
    for name, a, e, share in zip(names, actual, expected, shares):
        where = f"{system.run.clip} {system.run.grad_comm_dtype} step {step} {name}"
        atol = 2**-7 * float(share) if bf16 else 2e-7
        torch.testing.assert_close(a, e, rtol=2e-2 if bf16 else 2e-4, atol=atol, msg=lambda m, w=where: f"{w}: {m}")
        rounded += float((a - e).abs().max()) > 1e-4 * float(e.abs().max())  # fp32: about 1e-6 of it
    assert (rounded > len(names) // 2) == bf16, f"{rounded} of {len(names)} tensors differ from fp32 sums"


def different(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return any(not torch.allclose(x, y, rtol=1e-3, atol=1e-8) for x, y in zip(a, b))


def modes_worker(rank: int, world_size: int, data_dir: Path) -> None:
    samples = read_shard(sorted((data_dir / "train").glob("*.hdf5"))[0])
    for accumulate, precision in ((1, "fp32"), (2, "fp32"), (1, "fp16")):
        for mode in CLIP_KINDS:
            expectations = run_mode(rank, samples, clipping_system(world_size, mode, accumulate, precision))
        # The three expectations differ, so the check above tells the modes apart.
        after, before, bucketwise = expectations
        assert different(after, before) and different(before, bucketwise) and different(after, bucketwise)
    # With buckets as large as the model, bucket-wise clipping is the whole-gradient clipping.
    run_mode(rank, samples, clipping_system(world_size, "bucketwise_before_allreduce", bucket_cap_mb=25.0))
    for mode in CLIP_KINDS:  # the gradient sent in bf16, with accumulation (the hook holds micro-batches)
        run_mode(rank, samples, clipping_system(world_size, mode, accumulate=2, grad_comm_dtype="bf16"))


def test_each_clipping_mode_equals_a_direct_computation(spawn_ranks, small_dataset):
    spawn_ranks(modes_worker, 2, small_dataset)


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
    for mode in CLIP_KINDS:
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
