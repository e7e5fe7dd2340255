import numpy as np
import pytest
import torch

from bert.data.batch import collate
from bert.data.shards import read_shard
from bert.distributed.launch import DistContext
from bert.model.pretraining import BertForPreTraining
from bert.numerics import NumericalFault
from bert.optim.factory import build_optimizer, build_schedule
from bert.step import TrainStep
from bert.system import load_descriptor

CPU = DistContext(rank=0, world_size=1, local_rank=0, local_world_size=1, device=torch.device("cpu"))


def _system(accumulate: int):
    return load_descriptor("cpu_micro").variant({"gradient_accumulation_steps": accumulate, "clip_norm": 1e9})


def test_accumulated_gradient_is_the_mean_of_the_micro_batch_gradients(small_dataset):
    samples = read_shard(sorted((small_dataset / "train").glob("*.hdf5"))[0])
    batches = [collate(samples.take(np.arange(i * 8, i * 8 + 8))) for i in range(2)]
    system = _system(accumulate=2)
    torch.manual_seed(0)
    model = BertForPreTraining(system.model_config())
    expected = {}
    for batch in batches:
        model.zero_grad()
        model(**batch.model_inputs(unpadded=True)).loss.backward()
        for name, p in model.named_parameters():
            expected[name] = expected.get(name, 0) + p.grad / 2
    model.zero_grad()
    optimizer = build_optimizer(model, system.run.optimizer)
    seen = {}
    optimizer.step = lambda: seen.update({n: p.grad.clone() for n, p in model.named_parameters()})
    step = TrainStep(system.run, CPU, model, optimizer, build_schedule(system.run.optimizer))
    step(iter(batches), 0)
    for name in expected:
        assert torch.allclose(seen[name], expected[name], atol=1e-6), name
    loss, tokens = step.pop_loss_and_tokens()
    assert tokens == sum(b.num_tokens for b in batches) and loss > 0


def test_learning_rate_follows_the_schedule(small_dataset):
    samples = read_shard(sorted((small_dataset / "train").glob("*.hdf5"))[0])
    batch = collate(samples.take(np.arange(8)))
    system = _system(accumulate=1)
    model = BertForPreTraining(system.model_config())
    schedule = build_schedule(system.run.optimizer)
    step = TrainStep(system.run, CPU, model, build_optimizer(model, system.run.optimizer), schedule)
    step(iter([batch]), 7)
    assert step.optimizer.param_groups[0]["lr"] == schedule(7) > 0


def test_a_nan_loss_is_recorded_on_the_device_and_raised_at_the_check(small_dataset):
    samples = read_shard(sorted((small_dataset / "train").glob("*.hdf5"))[0])
    batches = [collate(samples.take(np.arange(i * 8, i * 8 + 8))) for i in range(4)]
    system = _system(accumulate=1)
    torch.manual_seed(0)
    model = BertForPreTraining(system.model_config())
    step = TrainStep(system.run, CPU, model, build_optimizer(model, system.run.optimizer),
                     build_schedule(system.run.optimizer), nan_at_step=2)
    loader = iter(batches)
    step(loader, 0)
    step.check_numerics()  # step 1 is clean
    for i in (1, 2, 3):
        step(loader, i)  # the fault is recorded, nothing raises inside the step
    with pytest.raises(NumericalFault, match="non-finite loss at step 2"):
        step.check_numerics()
