"""The clipping modes' kinds (bert.distributed.clip_kinds): every mode the descriptor accepts has its kind and its
Clipping, the simulator charges each as it runs, a mode is added by its name in the Literal and one entry in the
table, and no module but the table compares a mode's name."""

import contextlib
import typing

import pytest
import torch

from bert.distributed import clip_settings
from bert.distributed.clip_hook import BucketwiseBeforeAllreduce
from bert.distributed.clip_kinds import CLIP_KINDS, ClipKind, ClipMode
from bert.distributed.clipping import AfterAllreduce, BeforeAllreduce
from bert.launch.plan import TrainArgs, build_plan, describe
from bert.model.size import FP32_BYTES, gradient_buckets, parameter_count
from bert.simulate.time_to_train import allreduce_seconds, step_breakdown
from bert.system import load_descriptor
from bert.train import RunRequest, run
from bert.typed_config import ConfigError
from compliance.result_log import read_result_log
from tests.helpers.kinds import added_kind, name_comparisons

PARAMETERS = 10_000_000


def test_every_mode_the_descriptor_accepts_has_its_kind():
    assert tuple(CLIP_KINDS) == typing.get_args(ClipMode)
    assert typing.get_type_hints(clip_settings.ClipSpec)["clip"] == ClipMode


class _DdpStandIn:
    """What the bucket-wise hook touches of DDP's wrapper when it is made."""

    def __init__(self):
        self.module, self.process_group, self.hooked = torch.nn.Linear(1, 1), None, []

    def register_comm_hook(self, state, hook):
        self.hooked.append(hook)


@pytest.mark.parametrize("mode, one_process, ranks", [
    ("after_allreduce", AfterAllreduce, AfterAllreduce), ("before_allreduce", BeforeAllreduce, BeforeAllreduce),
    ("bucketwise_before_allreduce", BeforeAllreduce, BucketwiseBeforeAllreduce)])
def test_each_kind_builds_its_clipping(mode, one_process, ranks):
    made = {"params": [], "clip_norm": 1.0, "scaler": torch.amp.GradScaler("cpu", enabled=False), "accumulate": 1,
            "comm_dtype": torch.float32}
    assert type(CLIP_KINDS[mode].build(ddp=None, **made)) is one_process  # one process: no buckets apart
    assert type(CLIP_KINDS[mode].build(ddp=_DdpStandIn(), **made)) is ranks


def _step(mode: str):
    system = load_descriptor("dgxa100_8x8").variant({"clip": mode, "grad_comm_dtype": "fp32"})
    return system, step_breakdown(system, PARAMETERS, 1.0, 200.0)


def test_the_simulator_charges_each_mode_as_it_runs():
    before_system, before = _step("before_allreduce")
    perf, buckets = before_system.run.performance, gradient_buckets(PARAMETERS, before_system.run.bucket_cap_mb)
    one = allreduce_seconds(PARAMETERS * 4, 8, 8, perf, messages=1)
    assert before.allreduce_s == before.exposed_allreduce_s == one and before.norm_s == 0  # all of it exposed
    _, after = _step("after_allreduce")
    _, bucketwise = _step("bucketwise_before_allreduce")
    assert after.allreduce_s == bucketwise.allreduce_s == allreduce_seconds(PARAMETERS * 4, 8, 8, perf, buckets)
    assert after.exposed_allreduce_s == bucketwise.exposed_allreduce_s < after.allreduce_s  # behind the backward
    assert after.norm_s == PARAMETERS * FP32_BYTES / (perf.hbm_gb_s * 1e9) and bucketwise.norm_s == 0


def test_the_clip_modes_name_is_compared_in_its_table_only():
    assert name_comparisons(tuple(CLIP_KINDS), "bert/distributed/clip_kinds.py") == []


class _Unclipped:
    """A Clipping that clips nothing: a fourth mode, as a user would add one (one process: nothing to average)."""

    finished: list[int] = []

    def __init__(self, *, ddp, params, clip_norm, scaler, accumulate, comm_dtype):
        self.scaler = scaler

    def micro_batch(self, last: bool):
        return contextlib.nullcontext()

    def finish(self, optimizer):
        self.finished.append(1)
        self.scaler.unscale_(optimizer)
        return None


TOY = ClipKind("toy_unclipped", _Unclipped, per_bucket=False, norm_after_allreduce=False,
               plan=lambda clip, params, buckets: f"nothing clipped ({params:,} parameters)", closed_division=False)


@pytest.fixture
def toy_mode(monkeypatch):
    with added_kind(monkeypatch, CLIP_KINDS, TOY, clip_settings, "ClipMode"):
        yield


def test_a_mode_added_to_the_literal_and_the_table_runs_everywhere(toy_mode, small_dataset, tmp_path):
    """The toy kind, and nothing else changed: the descriptor takes it (open division only), a run steps with its
    Clipping to a finished log, the simulator charges one exposed message and the launch plan describes it."""
    micro = load_descriptor("cpu_micro")
    with pytest.raises(ConfigError, match=r"run.clip: 'toy_unclipped' is open-division only: the closed division "
                                          r"requires \"after_allreduce\" or \"before_allreduce\" or"):
        micro.variant({"clip": "toy_unclipped"}, description={"division": "closed"})
    system = micro.variant({"clip": "toy_unclipped", "max_samples": 64, "eval.interval_samples": 64},
                           name="micro_toy")
    _Unclipped.finished.clear()
    log = tmp_path / "result_0.txt"
    run(RunRequest(system, 3, log, small_dataset))
    assert len(_Unclipped.finished) == 2 and read_result_log(log).status == "aborted"  # 2 steps, then the cap
    two = system.variant({"processes_per_node": 2})
    step = step_breakdown(two, PARAMETERS, 1.0, 100.0)
    assert step.exposed_allreduce_s == step.allreduce_s == allreduce_seconds(
        PARAMETERS * 4, 1, 2, two.run.performance, messages=1) and step.norm_s == 0
    args = TrainArgs(seed=1, log_file=tmp_path / "r.txt", data_dir=small_dataset)
    lines = describe(build_plan(system, args, "torchrun", 4), system, 4)
    parameters = parameter_count(system.model_config())
    assert [line for line in lines if line.startswith("clip: ")] == [
        f"clip: toy_unclipped: nothing clipped ({parameters:,} parameters)"]


def test_the_literal_and_the_table_are_restored_after_the_toy():
    assert "toy_unclipped" not in CLIP_KINDS and "toy_unclipped" not in typing.get_args(clip_settings.ClipMode)
    with pytest.raises(ConfigError, match=r"run.clip: expected one of 'after_allreduce', 'before_allreduce', "
                                          r"'bucketwise_before_allreduce', got 'toy_unclipped'"):
        load_descriptor("cpu_micro").variant({"clip": "toy_unclipped"})
