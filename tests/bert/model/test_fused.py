"""bert.model.fused picks apex's fused LayerNorm exactly when apex is importable (tests/helpers/stand_in_apex.py), for
the LayerNorms outside the encoder layers: those are torch's, which a compiled layer traces and fuses."""

import contextlib

import pytest
import torch
from torch import nn

from bert.model import fused
from bert.model.config import named_config
from bert.model.pretraining import BertForPreTraining
from tests.helpers.stand_in_apex import FusedLayerNorm, apex_importable


def test_without_apex_everything_is_torch():
    fused.optional_module.cache_clear()
    if fused.optional_module("apex") is not None:
        pytest.skip("apex is installed here")
    assert not fused.fused_layer_norm_available()
    assert type(fused.layer_norm(8, 1e-12)) is nn.LayerNorm


def test_with_apex_the_embeddings_and_mlm_head_use_fused_layer_norm_and_the_encoder_torchs():
    with apex_importable():
        assert fused.fused_layer_norm_available()
        torch.manual_seed(0)
        model = BertForPreTraining(named_config("micro", num_layers=2))
    apex_norms = {n for n, m in model.named_modules() if isinstance(m, FusedLayerNorm)}
    assert apex_norms == {"bert.embeddings.layer_norm", "mlm.layer_norm"}
    encoder_norms = [m for m in model.bert.encoder.modules() if fused.is_layer_norm(m)]
    assert len(encoder_norms) == 2 * 2 and all(type(m) is nn.LayerNorm for m in encoder_norms)
    assert all(m.weight.eq(1).all() and m.bias.eq(0).all() for m in model.modules() if isinstance(m, FusedLayerNorm))
    assert "bert.encoder.0.layer_norm.weight" in dict(model.named_parameters())


@pytest.mark.parametrize("gelu", ["tanh", "erf"])
def test_with_apex_the_model_computes_the_configured_gelu(gelu):
    """apex replaces LayerNorms only: the activation stays the config's, so the model built with apex computes
    what the plain one computes, and the two GELUs differ."""
    from bert.data.batch import collate
    from tests.helpers.samples import make_samples

    config = named_config("micro", initializer_range=0.5, gelu=gelu)
    batch = collate(make_samples([12, 20], vocab=config.vocab_size, seed=0))
    losses = {}
    for apex_there in (True, False):
        with apex_importable() if apex_there else contextlib.nullcontext():
            torch.manual_seed(0)
            model = BertForPreTraining(config).eval()
        assert isinstance(model.mlm.layer_norm, FusedLayerNorm) == apex_there
        losses[apex_there] = model(**batch.model_inputs(unpadded=True)).loss
    torch.testing.assert_close(losses[True], losses[False], rtol=0, atol=0)
    torch.manual_seed(0)
    other = BertForPreTraining(config.replace(gelu="erf" if gelu == "tanh" else "tanh")).eval()
    assert other(**batch.model_inputs(unpadded=True)).loss != losses[False]
