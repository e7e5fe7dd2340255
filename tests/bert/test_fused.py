"""bert.fused picks apex's kernels exactly when apex (with its CUDA extensions) is importable."""

import sys
import types

import pytest
import torch
from torch import nn

from bert import fused
from bert.config import named_config
from bert.model import BertForPreTraining


@pytest.fixture
def fake_apex(monkeypatch):
    """An importable stand-in for apex: FusedLayerNorm as a LayerNorm that is not nn.LayerNorm, and
    FusedLAMB recording its arguments."""

    class FusedLayerNorm(nn.Module):
        def __init__(self, size, eps):
            super().__init__()
            self.weight, self.bias = nn.Parameter(torch.empty(size)), nn.Parameter(torch.empty(size))
            self.eps = eps

        def forward(self, x):
            return nn.functional.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)

    class FusedLAMB:
        def __init__(self, params, **kwargs):
            self.params, self.kwargs = list(params), kwargs

    apex = types.ModuleType("apex")
    apex.normalization = types.ModuleType("apex.normalization")
    apex.normalization.FusedLayerNorm = FusedLayerNorm
    apex.optimizers = types.ModuleType("apex.optimizers")
    apex.optimizers.FusedLAMB = FusedLAMB
    for name, module in {"apex": apex, "apex.normalization": apex.normalization,
                         "apex.optimizers": apex.optimizers, "amp_C": types.ModuleType("amp_C")}.items():
        monkeypatch.setitem(sys.modules, name, module)
    fused._optional_module.cache_clear()
    yield apex
    fused._optional_module.cache_clear()


def test_without_apex_everything_is_torch():
    fused._optional_module.cache_clear()
    if fused._optional_module("apex") is not None:
        pytest.skip("apex is installed here")
    assert not fused.fused_layer_norm_available() and not fused.fused_lamb_available()
    assert type(fused.layer_norm(8, 1e-12)) is nn.LayerNorm
    with pytest.raises(RuntimeError, match="FusedLAMB is not available"):
        fused.fused_lamb([torch.zeros(1, requires_grad=True)], 1e-3, (0.9, 0.999), 1e-6, 0.01, 1.0)


def test_with_apex_the_model_uses_fused_layer_norm_under_the_same_names(fake_apex):
    assert fused.fused_layer_norm_available() and fused.fused_lamb_available()
    torch.manual_seed(0)
    model = BertForPreTraining(named_config("micro"))
    norms = [m for m in model.modules() if isinstance(m, fake_apex.normalization.FusedLayerNorm)]
    assert len(norms) == 1 + 2 * 1 + 1  # embeddings, two per layer, the MLM head
    assert all(fused.is_layer_norm(m) and m.weight.eq(1).all() and m.bias.eq(0).all() for m in norms)
    assert "bert.encoder.0.layer_norm.weight" in dict(model.named_parameters())


def test_fused_lamb_gets_the_reference_semantics(fake_apex):
    params = [torch.zeros(2, requires_grad=True)]
    optimizer = fused.fused_lamb(params, 4e-4, (0.9, 0.999), 1e-6, 0.01, max_grad_norm=1.0)
    assert optimizer.kwargs == {"lr": 4e-4, "betas": (0.9, 0.999), "eps": 1e-6, "weight_decay": 0.01,
                                "bias_correction": True, "adam_w_mode": True, "grad_averaging": True,
                                "max_grad_norm": 1.0, "use_nvlamb": False}
    with pytest.raises(ValueError, match="max_grad_norm must be positive"):
        fused.fused_lamb(params, 4e-4, (0.9, 0.999), 1e-6, 0.01, max_grad_norm=0.0)
