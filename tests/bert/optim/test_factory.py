import math

import pytest
import torch

from bert.optim.factory import build_optimizer, build_schedule
from bert.optim.lamb import Lamb
from bert.optim.settings import OptimizerSpec

GRADS = [[0.1, -0.2, 0.3], [-0.05, 0.4, 0.1], [0.3, 0.3, -0.3]]


def _spec(name: str, **changes) -> OptimizerSpec:
    settings = {"name": name, "base_learning_rate": 0.1, "beta_1": 0.8, "beta_2": 0.9, "epsilon": 1e-3,
                "weight_decay_rate": 0.1, "training_steps": 10}
    return OptimizerSpec(**{**settings, **changes})


def _model() -> torch.nn.Module:
    """A weight (decayed) and a LayerNorm weight (not decayed), float64, 3 elements each."""
    model = torch.nn.Module()
    model.dense = torch.nn.Module()
    model.dense.weight = torch.nn.Parameter(torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64))
    model.layer_norm = torch.nn.LayerNorm(3, bias=False).double()
    with torch.no_grad():
        model.layer_norm.weight.copy_(torch.tensor([1.0, 0.5, -0.25]))
    return model


def _reference_adamw(w, grads, lr, b1, b2, eps, wd):
    """AdamW of Loshchilov & Hutter with bias correction, per element in plain Python floats."""
    w, m, v = list(w), [0.0] * len(w), [0.0] * len(w)
    for t, g in enumerate(grads, start=1):
        m = [b1 * mi + (1 - b1) * gi for mi, gi in zip(m, g)]
        v = [b2 * vi + (1 - b2) * gi * gi for vi, gi in zip(v, g)]
        w = [wi * (1 - lr * wd) - lr * (mi / (1 - b1**t)) / (math.sqrt(vi / (1 - b2**t)) + eps)
             for wi, mi, vi in zip(w, m, v)]
    return w


def test_adam_matches_hand_computed_steps_and_spares_layer_norm_from_decay():
    model = _model()
    start = {n: p.detach().tolist() for n, p in model.named_parameters()}
    optimizer = build_optimizer(model, _spec("adam"))
    assert isinstance(optimizer, torch.optim.AdamW)
    for g in GRADS:
        for p in model.parameters():
            p.grad = torch.tensor(g, dtype=torch.float64)
        optimizer.step()
    assert model.dense.weight.tolist() == pytest.approx(
        _reference_adamw(start["dense.weight"], GRADS, 0.1, 0.8, 0.9, 1e-3, wd=0.1), rel=1e-12)
    assert model.layer_norm.weight.tolist() == pytest.approx(
        _reference_adamw(start["layer_norm.weight"], GRADS, 0.1, 0.8, 0.9, 1e-3, wd=0.0), rel=1e-12)


def test_lamb_is_ours():
    optimizer = build_optimizer(_model(), _spec("lamb"))
    assert isinstance(optimizer, Lamb)
    assert [g["weight_decay"] for g in optimizer.param_groups] == [0.1, 0.0]
    assert [g["layer_adaptation"] for g in optimizer.param_groups] == [True, False]
    assert optimizer.defaults["betas"] == (0.8, 0.9) and optimizer.defaults["eps"] == 1e-3


def test_compiled_lamb_is_ours_compiled():
    optimizer = build_optimizer(_model(), _spec("lamb", implementation="compiled"))
    assert isinstance(optimizer, Lamb) and optimizer.compiled
    assert not build_optimizer(_model(), _spec("lamb")).compiled


def test_compiled_adam_is_refused_in_the_descriptor():
    from bert.system import load_descriptor
    from bert.typed_config import ConfigError

    with pytest.raises(ConfigError, match="run.optimizer.implementation"):
        load_descriptor("cpu_tiny_adam").variant({"optimizer.implementation": "compiled"})


@pytest.mark.skipif(not torch.cuda.is_available(), reason="torch's fused AdamW needs a CUDA device")
def test_cuda_adam_is_fused_and_matches_the_reference():
    model = _model().float().cuda()
    start = model.dense.weight.detach().tolist()
    optimizer = build_optimizer(model, _spec("adam"))
    for g in GRADS:
        for p in model.parameters():
            p.grad = torch.tensor(g, device="cuda")
        optimizer.step()
    if isinstance(optimizer, torch.optim.AdamW):
        assert optimizer.defaults["fused"] is True
    assert model.dense.weight.tolist() == pytest.approx(
        _reference_adamw(start, GRADS, 0.1, 0.8, 0.9, 1e-3, wd=0.1), rel=1e-5)


def test_schedule_comes_from_the_descriptor():
    schedule = build_schedule(_spec("adam", warmup_steps=4, start_warmup_step=-2, end_learning_rate=0.01,
                                    training_steps=8))
    assert schedule(0) == pytest.approx(0.1 * 2 / 4)
    assert schedule(4) == pytest.approx(0.09 * 0.5 + 0.01)
    assert schedule(8) == pytest.approx(0.01) and schedule(100) == pytest.approx(0.01)
