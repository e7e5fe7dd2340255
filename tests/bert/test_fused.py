"""bert.fused picks apex's fused LayerNorm exactly when apex is importable."""

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
    """An importable stand-in for apex: FusedLayerNorm as a LayerNorm that is not nn.LayerNorm."""

    class FusedLayerNorm(nn.Module):
        def __init__(self, size, eps):
            super().__init__()
            self.weight, self.bias = nn.Parameter(torch.empty(size)), nn.Parameter(torch.empty(size))
            self.eps = eps

        def forward(self, x):
            return nn.functional.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)

    apex = types.ModuleType("apex")
    apex.normalization = types.ModuleType("apex.normalization")
    apex.normalization.FusedLayerNorm = FusedLayerNorm
    for name, module in {"apex": apex, "apex.normalization": apex.normalization}.items():
        monkeypatch.setitem(sys.modules, name, module)
    fused._optional_module.cache_clear()
    yield apex
    fused._optional_module.cache_clear()


def test_without_apex_everything_is_torch():
    fused._optional_module.cache_clear()
    if fused._optional_module("apex") is not None:
        pytest.skip("apex is installed here")
    assert not fused.fused_layer_norm_available()
    assert type(fused.layer_norm(8, 1e-12)) is nn.LayerNorm


def test_with_apex_the_model_uses_fused_layer_norm_under_the_same_names(fake_apex):
    assert fused.fused_layer_norm_available()
    torch.manual_seed(0)
    model = BertForPreTraining(named_config("micro"))
    norms = [m for m in model.modules() if isinstance(m, fake_apex.normalization.FusedLayerNorm)]
    assert len(norms) == 1 + 2 * 1 + 1  # embeddings, two per layer, the MLM head
    assert all(fused.is_layer_norm(m) and m.weight.eq(1).all() and m.bias.eq(0).all() for m in norms)
    assert "bert.encoder.0.layer_norm.weight" in dict(model.named_parameters())
