"""The start of a run on 2 gloo ranks (bert.train._run): the ranks start the clock together, each rank draws
its own dropout stream while the data order stays the run seed's, and the log names the run seed once. Each
rank is handed a seed of its own, as when every process draws one (Descriptor.run_seed): the run's is rank 0's."""

from __future__ import annotations

import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F

import bert.train as trainer
from bert.data.dataset import dataset_files
from bert.data.loader import LoaderBalance, TrainLoader
from bert.distributed.launch import DistContext
from bert.mllog import RunLog
from bert.system import load_descriptor
from compliance.result_log import read_result_log

SEED, LATE_S = 4242, 1.5


def _watch(rank: int, seen: dict) -> None:
    """Patches this rank's trainer (in its own process) to note what the test compares."""
    if rank == 1:  # arrives late at run_start; the others must wait for it
        balance = trainer.loader_balance

        def late(*args):
            time.sleep(LATE_S)
            seen["arrived"] = time.time()
            return balance(*args)

        trainer.loader_balance = late

    class FirstBatch(TrainLoader):
        def __next__(self):
            batch = super().__next__()
            if "first" not in seen:  # the dropout stream as the first step finds it, and the first batch
                seen["mask"] = F.dropout(torch.ones(4096), 0.5) > 0
                seen["first"] = batch.input_ids.clone()
            return batch

    trainer.TrainLoader = FirstBatch


def startup_worker(rank: int, world_size: int, system_path: Path, data_dir: Path, log_path: Path) -> None:
    system = load_descriptor(system_path)
    ctx = DistContext(rank, world_size, rank, world_size, torch.device("cpu"))
    seen: dict = {}
    _watch(rank, seen)
    log = RunLog(log_path, rank, echo=False)
    request = trainer.RunRequest(system, SEED + rank, log_path, data_dir)  # rank 1's own seed must not count
    status, reason = trainer._run(request, ctx, log, trainer.Progress(), lambda: None)
    log.close()
    assert "sample cap" in reason, (status, reason)

    torch.manual_seed(987)  # a fresh loader under another torch seed deals the same first batch
    fresh = TrainLoader(dataset_files(system.dataset_needs(data_dir)).train_shards, rank, world_size, SEED,
                        system.per_process_batch, ctx.device, LoaderBalance(system.balance))
    same_order = torch.equal(next(fresh).input_ids, seen["first"])
    fresh.close()
    everyone: list = [None] * world_size
    dist.all_gather_object(everyone, (seen["mask"], seen.get("arrived"), same_order))
    # Every rank checks the same (gathered) facts, so that a failure reads the same from whichever rank.
    (mask0, _, order0), (mask1, arrived, order1) = everyone
    assert not torch.equal(mask0, mask1), "both ranks drew the same dropout mask"
    assert order0 and order1, "the data order depends on torch's generator state"
    result = read_result_log(log_path)
    run_start = result.first("run_start").time_ms
    assert run_start >= arrived * 1000 - 20, f"run_start {run_start - arrived * 1000:.0f} ms before rank 1 arrived"
    assert result.values("seed") == [SEED]


def test_ranks_start_together_with_their_own_dropout_streams_and_the_run_seeds_data_order(
        spawn_ranks, small_dataset, tmp_path):
    system = load_descriptor("cpu_micro").variant(
        {"processes_per_node": 2, "max_samples": 32,  # one step of 32, then the sample cap
         "eval.samples": 64, "eval.interval_samples": 32, "eval.batch_size": 64}, name="startup_micro").write(tmp_path)
    spawn_ranks(startup_worker, 2, system.path, small_dataset, tmp_path / "result_0.txt")
