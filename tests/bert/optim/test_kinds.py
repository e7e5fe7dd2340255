"""The optimizers' kinds (bert.optim.kinds): every name the descriptor accepts has its kind, each kind builds its
optimizer and counts its update, an optimizer is added by its name in the Literal and one entry in the table, and
no module but the table compares an optimizer's name."""

import typing

import pytest
import torch

from bert.launch.plan import TrainArgs, build_plan, describe
from bert.mllog import RUN_HYPERPARAMETER_KEYS
from bert.model.size import FP32_BYTES
from bert.optim import settings
from bert.optim.factory import build_optimizer
from bert.optim.kinds import OPTIMIZERS, OptimizerKind, OptimizerName
from bert.optim.lamb import Lamb
from bert.simulate.time_to_train import predict
from bert.system import load_descriptor
from bert.train import RunRequest, run
from bert.typed_config import ConfigError
from compliance.result_log import read_result_log
from tests.helpers.kinds import added_kind, name_comparisons


def test_every_name_the_descriptor_accepts_has_its_kind():
    assert tuple(OPTIMIZERS) == typing.get_args(OptimizerName) == ("lamb", "adam")
    assert typing.get_type_hints(settings.OptimizerSpec)["name"] == OptimizerName


@pytest.mark.parametrize("name, built", [("lamb", Lamb), ("adam", torch.optim.AdamW)])
def test_each_kind_builds_its_optimizer_and_counts_its_update(name, built):
    spec = settings.OptimizerSpec(name=name, base_learning_rate=0.1, training_steps=10)
    assert isinstance(build_optimizer(torch.nn.Linear(2, 2), spec), built)
    assert spec.kind.update_bytes(spec, "bf16") > 0


def test_the_optimizers_name_is_compared_in_its_table_only():
    assert name_comparisons(tuple(OPTIMIZERS), "bert/optim/kinds.py") == []


class _ToySgd(torch.optim.SGD):
    """SGD with beta_1 as its momentum: a third optimizer, as a user would add one."""

    built: list["_ToySgd"] = []

    def __init__(self, groups: list[dict], spec: settings.OptimizerSpec, cuda: bool):
        super().__init__(groups, lr=spec.base_learning_rate, momentum=spec.beta_1)
        self.steps = 0
        self.built.append(self)

    def step(self, closure=None):
        self.steps += 1
        return super().step(closure)


TOY = OptimizerKind("toy_sgd", "SGD", _ToySgd, {"eager": "torch's SGD"}, lambda spec, precision: 3 * FP32_BYTES,
                    {"opt_toy_momentum": "beta_1"}, "Optimizer SGD: its momentum is logged as opt_toy_momentum.",
                    closed_division=False, reference=False)


@pytest.fixture
def toy_optimizer(monkeypatch):
    with added_kind(monkeypatch, OPTIMIZERS, TOY, settings, "OptimizerName"):
        yield


def test_an_optimizer_added_to_the_literal_and_the_table_runs_everywhere(toy_optimizer, small_dataset, tmp_path):
    """The toy kind, and nothing else changed: the descriptor takes it (open division only), a run builds it and
    steps it, its log states its own key, the simulator charges its update and the launch plan is made."""
    micro = load_descriptor("cpu_micro")
    with pytest.raises(ConfigError, match=r"run.optimizer.name: 'toy_sgd' is open-division only: the closed "
                                          r"division requires \"lamb\""):
        micro.variant({"optimizer.name": "toy_sgd"}, description={"division": "closed"})
    system = micro.variant({"optimizer.name": "toy_sgd", "optimizer.beta_1": 0.5, "max_samples": 64,
                            "eval.interval_samples": 64}, name="micro_toy")
    _ToySgd.built.clear()
    log = tmp_path / "result_0.txt"
    run(RunRequest(system, 3, log, small_dataset))
    assert [optimizer.steps for optimizer in _ToySgd.built] == [2]  # 64 samples, 32 a step
    logged = read_result_log(log)
    assert logged.status == "aborted" and logged.value("eval_accuracy") is not None  # the cap, after its eval
    assert logged.value("opt_toy_momentum") == 0.5 and logged.value("opt_lamb_beta_1") is None
    assert {key: logged.value(key) is not None for key in RUN_HYPERPARAMETER_KEYS} == dict.fromkeys(
        RUN_HYPERPARAMETER_KEYS, True)
    step = predict(system, 64).step
    assert step.optimizer_bytes == 3 * FP32_BYTES
    assert step.optimizer_s == pytest.approx(predict(micro, 64).parameters * 12 / (
        system.run.performance.hbm_gb_s * 1e9))
    args = TrainArgs(seed=1, log_file=tmp_path / "r.txt", data_dir=small_dataset)
    assert describe(build_plan(system, args, "torchrun", 4), system, 4)[0].startswith("system micro_toy:")


def test_the_literal_and_the_table_are_restored_after_the_toy():
    assert "toy_sgd" not in OPTIMIZERS and "toy_sgd" not in typing.get_args(settings.OptimizerName)
    with pytest.raises(ConfigError, match=r"run.optimizer.name: expected one of 'lamb', 'adam', got 'toy_sgd'"):
        load_descriptor("cpu_micro").variant({"optimizer.name": "toy_sgd"})
