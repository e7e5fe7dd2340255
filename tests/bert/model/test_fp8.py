"""run.precision "fp8" on the CPU (bert.model.fp8): torchao's float8 training, emulated (each FP8 cast rounds the
values to E4M3 or E5M2 and back, the matmul runs in high precision), against bf16 on the same weights and batches,
and a micro model trained in emulated FP8 against bf16 in the same steps; the encoder's Linear layers are the only
FP8 ones, with the same fp32 parameters under the same names; Transformer Engine is chosen where it is importable
(a stand-in, tests/helpers/stand_in_transformer_engine.py). tests/cuda_path traces the FP8 layer on fake CUDA."""

import copy
import re

import numpy as np
import pytest
import torch
from torch import nn

from bert.data.batch import collate
from bert.distributed.launch import DistContext
from bert.model.config import named_config
from bert.model.fp8 import TORCHAO, TRANSFORMER_ENGINE, encoder_to_fp8, fp8_backend
from bert.model.pretraining import BertForPreTraining
from bert.optim.factory import build_optimizer, build_schedule
from bert.step import TrainStep
from bert.system import load_descriptor
from tests.helpers import stand_in_transformer_engine as stand_in
from tests.helpers.samples import make_samples

CPU = torch.device("cpu")
# Measured on the tiny model's first three batches (torch 2.13, torchao 0.18): the loss within 1.6e-5 of bf16's
# (relative), the whole gradient within 0.9%, each tensor's within 9.2%. E5M2 keeps 2 bits of mantissa: one
# gradient element may be 12% off, and the tensors' errors average out. The tolerances leave room for other seeds.
LOSS_TOLERANCE, GRADIENT_TOLERANCE, TENSOR_TOLERANCE = 1e-3, 0.03, 0.25


def _fp8_system():
    return load_descriptor("cpu_micro").variant({"precision": "fp8"})


def test_the_step_makes_the_encoders_linear_layers_fp8_and_keeps_every_parameter_and_name():
    system = _fp8_system()
    torch.manual_seed(0)
    model = BertForPreTraining(system.model_config())
    names = {n: (p, p.dtype) for n, p in model.named_parameters()}
    keys = list(model.state_dict())
    optimizer = build_optimizer(model, system.run.optimizer)  # before the step converts, as bert.train builds it
    step = TrainStep(system.run, DistContext(0, 1, 0, 1, CPU), model, optimizer, build_schedule(system.run.optimizer))
    assert step.fp8 == TORCHAO == fp8_backend()
    fp8 = {n for n, m in model.named_modules() if type(m).__name__ == "Float8Linear"}
    assert fp8 == {f"bert.encoder.0.{part}" for part in ("attention.qkv", "attention.output", "intermediate", "output")}
    assert all(type(m) is nn.Linear for n, m in model.named_modules() if "Linear" in type(m).__name__ and n not in fp8)
    # The same parameter objects (the optimizer's), fp32, under the same names: checkpoints do not change.
    assert {n: (p, p.dtype) for n, p in model.named_parameters()} == names and list(model.state_dict()) == keys
    assert all(p.dtype == torch.float32 for p in model.parameters())


def _loss_and_gradients(model: BertForPreTraining, batch) -> tuple[float, list[torch.Tensor]]:
    model.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(**batch.model_inputs(True))
    out.loss.backward()
    return out.loss.item(), [p.grad.clone() for p in model.parameters()]


def test_emulated_fp8_loss_and_gradients_stay_within_the_measured_tolerance_of_bf16():
    torch.manual_seed(0)
    bf16 = BertForPreTraining(named_config("tiny"))
    fp8 = copy.deepcopy(bf16)
    assert encoder_to_fp8(fp8.bert.encoder, CPU) == TORCHAO
    rng = np.random.default_rng(0)
    encoder_weights = [i for i, (n, _) in enumerate(bf16.named_parameters()) if "encoder" in n and "weight" in n
                       and "layer_norm" not in n]
    for k in range(3):
        batch = collate(make_samples(rng.integers(8, 65, 16).tolist(), vocab=4096, predictions=10, seed=k))
        (loss, grads), (fp8_loss, fp8_grads) = _loss_and_gradients(bf16, batch), _loss_and_gradients(fp8, batch)
        assert abs(fp8_loss - loss) <= LOSS_TOLERANCE * loss
        whole, fp8_whole = torch.cat([g.flatten() for g in grads]), torch.cat([g.flatten() for g in fp8_grads])
        assert (fp8_whole - whole).norm() <= GRADIENT_TOLERANCE * whole.norm()
        errors = [float((b - a).norm() / a.norm()) for a, b in zip(grads, fp8_grads) if a.norm() > 0]
        assert max(errors) <= TENSOR_TOLERANCE, max(errors)
        # ... and FP8 did round: bf16 against itself would be 0.
        assert min(errors[i] for i in encoder_weights) > 1e-3, errors


@pytest.mark.long_running
def test_a_micro_model_trained_in_emulated_fp8_reaches_bf16s_accuracy_in_the_same_steps(tmp_path, small_dataset,
                                                                                        capsys):
    from bert.train import RunRequest, run
    from compliance.result_log import read_result_log

    runs = {}
    for precision in ("bf16", "fp8"):
        system = load_descriptor("cpu_micro").variant({"precision": precision, "max_samples": 4096})
        log = tmp_path / f"{precision}.txt"
        code = run(RunRequest(system, seed=3, log_path=log, data_dir=small_dataset, verbose=True))
        losses = [float(x) for x in re.findall(r"^step \d+ samples \d+ loss ([0-9.]+)", capsys.readouterr().out, re.M)]
        evals = [(x.metadata["epoch_num"], x.value) for x in read_result_log(log).events if x.key == "eval_accuracy"]
        runs[precision] = (code, evals, losses)
    (code, evals, losses), (fp8_code, fp8_evals, fp8_losses) = runs["bf16"], runs["fp8"]
    assert code == fp8_code == 0, runs  # both reach cpu_micro's target ...
    assert [s for s, _ in fp8_evals] == [s for s, _ in evals], runs  # ... at the same eval
    assert all(abs(a - b) <= 0.005 for (_, a), (_, b) in zip(evals, fp8_evals)), runs
    assert len(losses) == len(fp8_losses) > 4 and abs(fp8_losses[-1] - losses[-1]) <= 0.02 * losses[-1], runs


def test_transformer_engine_is_chosen_where_importable_and_its_context_wraps_every_forward():
    with stand_in.transformer_engine_importable():
        system = _fp8_system()
        torch.manual_seed(0)
        model = BertForPreTraining(system.model_config())
        names = {n: p for n, p in model.named_parameters()}
        step = TrainStep(system.run, DistContext(0, 1, 0, 1, CPU), model, build_optimizer(model, system.run.optimizer),
                         build_schedule(system.run.optimizer))
        assert step.fp8 == TRANSFORMER_ENGINE == fp8_backend()
        layers = [m for m in model.modules() if isinstance(m, stand_in.Linear)]
        assert len(layers) == 4 and {n: p for n, p in model.named_parameters()} == names
        batch = collate(make_samples([20, 30], vocab=4096, predictions=10, seed=0))
        step.forward_backward(batch, model)
        assert all(layer.ran_in_fp8 == [True] for layer in layers)
        assert stand_in.ENTERED == [stand_in.DelayedScaling(stand_in.Format.HYBRID)]
    assert fp8_backend() == TORCHAO


@pytest.mark.parametrize("capability, refused", [((8, 0), True), ((9, 0), False)])
def test_a_gpu_without_fp8_tensor_cores_is_refused_in_one_line(capability, refused, monkeypatch):
    from bert.model import fp8 as fp8_module

    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA A100-SXM4-80GB")
    monkeypatch.setattr(fp8_module, "_swap_linears", lambda *args: None)
    monkeypatch.setattr(fp8_module._torchao_float8(), "convert_to_float8_training", lambda *args, **kwargs: None)
    if refused:
        with pytest.raises(fp8_module.Fp8Unavailable, match=r"needs FP8 tensor cores .*A100-SXM4-80GB has 8\.0: "
                                                            r"use bf16"):
            encoder_to_fp8(nn.Sequential(), torch.device("cuda", 0))
    else:
        assert encoder_to_fp8(nn.Sequential(), torch.device("cuda", 0)) == TORCHAO
