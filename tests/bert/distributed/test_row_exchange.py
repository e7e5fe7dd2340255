"""The row exchange (bert.distributed.row_exchange): packing by rows over gloo ranks gives every rank the same
number of rows, counts that add up to the global batch, and with the loss weights the step (loss and averaged
gradient) is the unpacked step of the same sequences in one process; its group waits the descriptor's timeout."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from bert.data.batch import collate
from bert.data.packed_batches import PackedBatches
from bert.data.shards import Samples
from bert.distributed.row_exchange import build_row_exchange
from bert.model.config import named_config
from bert.model.pretraining import BertForPreTraining
from tests.helpers.samples import make_samples

BATCH, ROW_LEN, PREDICTIONS = 6, 64, 4


def _stream(rank: int):
    """Rank 0 reads short sequences (three fit a row), rank 1 long ones (one a row): their counts must differ."""
    rng = np.random.default_rng(rank)
    step = 0
    while True:
        low, high = (8, 20) if rank == 0 else (40, 64)
        samples = make_samples(rng.integers(low, high + 1, BATCH).tolist(), seed=100 * rank + step,
                               predictions=PREDICTIONS)
        samples.tokens[samples.offsets[:-1]] = 1000 + 100 * rank + step * BATCH + np.arange(BATCH)  # ids at [CLS]
        step += 1
        yield samples


def _model() -> BertForPreTraining:
    torch.manual_seed(0)
    return BertForPreTraining(named_config("micro", max_position_embeddings=ROW_LEN)).double().eval()


def packed_worker(rank: int, world_size: int) -> None:
    stream = _stream(rank)
    packer = PackedBatches(lambda: next(stream), BATCH, ROW_LEN, rank, build_row_exchange(world_size, timeout_s=30))
    model = _model()
    trained = DistributedDataParallel(model) if world_size > 1 else model
    seen, counts = [], []
    for _ in range(3):  # the window carries over: later steps take what earlier ones passed over
        batch = next(packer)
        model.zero_grad()
        loss = batch.loss(trained(**batch.model_inputs(unpadded=True)))
        loss.backward()
        if world_size == 1:
            assert (batch.mlm_weight, batch.nsp_weight) == (1.0, 1.0)
        taken = _gather(batch, world_size)
        counts.append([len(part[0]) for part in taken])
        seen += [i for part in taken for i in part[0].tokens[part[0].offsets[:-1]].tolist()]
        assert sum(len(part[0]) for part in taken) == BATCH * world_size  # the global batch, in sequences
        assert len({part[1] for part in taken}) == 1  # the same number of packed rows on every rank
        step_loss = loss.detach().clone()
        if world_size > 1:
            dist.all_reduce(step_loss)
            step_loss /= world_size
        reference = _model()
        everything = Samples.concat([part[0] for part in taken])
        expected = reference(**collate(everything).model_inputs(unpadded=False))
        expected.loss.backward()
        # The model computes its losses in fp32 (bert.model.pretraining), so fp32 tolerances.
        assert torch.allclose(step_loss, expected.loss, rtol=1e-6), (step_loss, expected.loss)
        for got, want in zip(model.parameters(), reference.parameters()):
            assert torch.allclose(got.grad, want.grad, rtol=1e-5, atol=1e-9)
    packer.close()
    assert len(seen) == len(set(seen))  # no sample twice
    if world_size > 1:
        assert all(c[0] > c[1] for c in counts), counts  # short sequences: more of them into the same rows


def _gather(batch, world_size: int) -> list[tuple[Samples, int]]:
    """Every rank's (taken samples, packed rows), read back from the batch itself."""
    layout = batch.layout
    lengths = (layout.cu_seqlens[1:] - layout.cu_seqlens[:-1]).numpy().astype(np.int64)
    flat = batch.input_ids.flatten()[layout.indices].numpy().astype(np.int32)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    flat_segments = batch.segment_ids.flatten()[layout.indices].numpy().astype(np.int8)
    masked_positions, masked_ids = _masked(batch, lengths)
    mine = Samples(flat, flat_segments, offsets, masked_positions, masked_ids, batch.nsp_labels.numpy().astype(np.int8))
    everyone = [None] * world_size
    if world_size > 1:
        dist.all_gather_object(everyone, (mine, layout.batch_size))
    else:
        everyone = [(mine, layout.batch_size)]
    return everyone


def _masked(batch, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each sequence's masked positions and ids, from the batch's unpadded masked-token rows."""
    starts = np.concatenate([[0], np.cumsum(lengths)])[:-1]
    rows = batch.mlm_index_unpadded.numpy()
    owner = np.searchsorted(starts, rows, side="right") - 1
    positions = np.zeros((len(lengths), PREDICTIONS), np.int32)
    ids = np.zeros((len(lengths), PREDICTIONS), np.int32)
    for b in range(len(lengths)):
        mine = np.flatnonzero(owner == b)
        positions[b, :len(mine)] = rows[mine] - starts[b]
        ids[b, :len(mine)] = batch.mlm_labels.numpy()[mine]
    return positions, ids


@pytest.mark.parametrize("world_size", [1, 2])
def test_packed_step_equals_the_unpacked_step_of_the_same_sequences(spawn_ranks, world_size):
    spawn_ranks(packed_worker, world_size)


def test_the_packing_group_waits_the_descriptors_timeout(monkeypatch):
    created = []
    monkeypatch.setattr(dist, "new_group", lambda members, **kwargs: created.append((members, kwargs)))
    build_row_exchange(4, timeout_s=7.5)
    assert created == [([0, 1, 2, 3], {"backend": "gloo", "timeout": timedelta(seconds=7.5)})]
