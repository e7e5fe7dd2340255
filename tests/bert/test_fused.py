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


@pytest.mark.parametrize("gelu", ["tanh", "erf"])
def test_with_apex_the_model_computes_the_configured_gelu(gelu, fake_apex, monkeypatch):
    """apex replaces the LayerNorms only: the activation stays the config's, so the fused model's outputs are
    the plain one's, and the two GELUs' differ."""
    from bert.data.batch import collate
    from tests.helpers.samples import make_samples

    config = named_config("micro", initializer_range=0.5, gelu=gelu)
    batch = collate(make_samples([12, 20], vocab=config.vocab_size, seed=0))
    outputs = {}
    for apex_there in (True, False):
        if not apex_there:
            for name in ("apex", "apex.normalization"):
                monkeypatch.setitem(sys.modules, name, None)  # as if not installed
            fused._optional_module.cache_clear()
        torch.manual_seed(0)
        model = BertForPreTraining(config).eval()
        assert fused.is_layer_norm(model.mlm.layer_norm) and (type(model.mlm.layer_norm) is nn.LayerNorm) != apex_there
        outputs[apex_there] = model(**batch.model_inputs(unpadded=True)).loss
    torch.testing.assert_close(outputs[True], outputs[False], rtol=0, atol=0)
    torch.manual_seed(0)
    other = BertForPreTraining(config.replace(gelu="erf" if gelu == "tanh" else "tanh")).eval()
    assert other(**batch.model_inputs(unpadded=True)).loss != outputs[False]
