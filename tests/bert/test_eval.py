"""The eval set (bert.eval): the first run.eval.samples of the eval file dealt across ranks, an eval file with
fewer refused naming the file and the field, and the accuracy as masked tokens right over masked tokens seen,
with the model put back in the mode it was in."""

import contextlib

import numpy as np
import pytest
import torch
from torch import nn

from bert.data.batch import collate
from bert.data.shards import ShardError, read_shard
from bert.distributed.launch import DistContext
from bert.eval import EvalSet

CPU = torch.device("cpu")


def test_rank_r_of_w_evaluates_every_wth_sample_from_r_in_batches(small_dataset):
    path = small_dataset / "eval.hdf5"
    eval_set = EvalSet(path, 10, DistContext(1, 2, 1, 2, CPU), batch_size=3)
    assert eval_set.num_samples == 10 and [b.num_samples for b in eval_set.batches] == [3, 2]
    mine = read_shard(path).take(np.array([1, 3, 5, 7, 9]))
    assert torch.equal(eval_set.batches[0].input_ids, collate(mine.take(np.arange(3))).input_ids)
    assert torch.equal(eval_set.batches[1].input_ids, collate(mine.take(np.arange(3, 5))).input_ids)
    with pytest.raises(ShardError, match=r"eval\.hdf5: has 256 eval samples, fewer than the 257 the descriptor asks "
                                         r"for \(run\.eval\.samples\)"):
        EvalSet(path, 257, DistContext(0, 1, 0, 1, CPU), batch_size=3)


class _Scored(nn.Module):
    """A model whose every batch gets 1 of its 4 masked tokens right; it notes the mode it ran in."""

    def __init__(self):
        super().__init__()
        self.modes = []

    def forward(self, **inputs):
        self.modes.append(self.training)
        return type("Out", (), {"mlm_correct": torch.tensor(1), "mlm_count": torch.tensor(4)})


def test_accuracy_is_correct_over_seen_in_eval_mode_and_the_mode_is_restored(small_dataset):
    eval_set = EvalSet(small_dataset / "eval.hdf5", 12, DistContext(0, 1, 0, 1, CPU), batch_size=5)
    model = _Scored().train()
    assert eval_set.accuracy(model, True, contextlib.nullcontext()) == 0.25
    assert model.modes == [False] * 3 and model.training
