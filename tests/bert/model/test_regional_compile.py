"""Regional compilation (bert.model.pretraining.compile_encoder) on the CPU's inductor: an encoder layer compiles whole,
with dropout, in one graph that every layer shares, and batches of ever-changing token counts recompile it at
most a couple of times; with token sizes (run.token_sizes) the layer is compiled for static shapes, once per
size. One inductor compilation of a small layer: about 20-60 s on a shared 2-core machine."""

import numpy as np
import pytest
import torch
import torch._dynamo
from torch._dynamo.utils import counters

from bert.data.batch import collate
from bert.model.config import named_config
from bert.model.padding import TokenLayout
from bert.model.pretraining import BertForPreTraining, EncoderLayer, compile_encoder
from bert.model.token_rounding import TokenSizes
from tests.helpers.compile import skip_unless_compile_works
from tests.helpers.samples import make_samples

CONFIG = named_config("micro", num_layers=3, hidden_dropout=0.1, attention_dropout=0.1)
STEPS = 100


def _layout(rng: np.random.Generator) -> TokenLayout:
    lengths = torch.from_numpy(rng.integers(1, 65, int(rng.integers(2, 9))))
    return TokenLayout.from_lengths(lengths, -(-int(lengths.max()) // 8) * 8)


@pytest.mark.parametrize("gelu", ["tanh", "erf"])
def test_an_encoder_layer_traces_to_one_graph_without_a_break(gelu):
    config = CONFIG.replace(gelu=gelu, initializer_range=0.5)  # wide activations: the GELUs differ visibly
    torch.manual_seed(0)
    layer = EncoderLayer(config).train()
    layout = _layout(np.random.default_rng(0))
    x = torch.randn(layout.num_tokens, config.hidden_size, requires_grad=True)
    explained = torch._dynamo.explain(layer)(x, layout, None)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0), explained.break_reasons
    # The traced graph computes what the layer does (eval: no dropout, so the values can be compared), with the
    # config's GELU: the other one's output is far outside the tolerance.
    layer.eval()
    compiled = torch.compile(layer, backend="aot_eager", dynamic=True, fullgraph=True)
    out = compiled(x, layout, None)
    torch.testing.assert_close(out, layer(x, layout, None), rtol=1e-5, atol=1e-6)
    other = EncoderLayer(config.replace(gelu="erf" if gelu == "tanh" else "tanh")).eval()
    other.load_state_dict(layer.state_dict())
    assert (other(x, layout, None) - out).abs().max() > 1e-4


def test_100_steps_of_changing_token_counts_compile_the_shared_layer_graph_at_most_twice():
    skip_unless_compile_works()
    torch._dynamo.reset()
    counters.clear()
    torch.manual_seed(0)
    model = BertForPreTraining(CONFIG).train()
    compile_encoder(model)
    rng = np.random.default_rng(1)
    token_counts = set()
    for _ in range(STEPS):
        layout = _layout(rng)
        token_counts.add(layout.num_tokens)
        x = torch.randn(layout.num_tokens, CONFIG.hidden_size, requires_grad=True)
        for layer in model.bert.encoder:
            x = layer(x, layout, None)
        x.square().mean().backward()
    assert len(token_counts) > 50  # the shapes really changed
    compiles = counters["stats"]["unique_graphs"]
    assert 1 <= compiles <= 2, dict(counters["stats"])
    assert not counters["graph_break"], dict(counters["graph_break"])
    assert counters["stats"]["calls_captured"] > 0
    layer = model.bert.encoder[0]
    assert all(p.grad is not None and p.grad.isfinite().all() for p in layer.parameters())


def test_with_token_sizes_100_steps_meet_at_most_k_shapes_and_compile_the_static_layer_at_most_k_times():
    skip_unless_compile_works()
    torch._dynamo.reset()
    counters.clear()
    torch.manual_seed(0)
    k, batch_size = 2, 6  # each inductor compilation (forward and backward) takes 20-40 s here
    model = BertForPreTraining(CONFIG).train()
    compile_encoder(model, token_sizes=k)  # dynamic=False: one graph per shape
    sizes = TokenSizes.spread(k, batch_size, 64)
    rng = np.random.default_rng(2)
    raw, rounded = set(), set()
    for step in range(STEPS):
        lengths = rng.integers(2, 65, batch_size).tolist()
        batch = collate(make_samples(lengths, vocab=CONFIG.vocab_size, seed=step), sizes=sizes)
        raw.add(batch.num_tokens)
        rounded.add(batch.layout.num_tokens)
        model(**batch.model_inputs(unpadded=True)).loss.backward()
    assert len(raw) > 50 and 2 <= len(rounded) <= k, (len(raw), rounded)
    assert 2 <= counters["stats"]["unique_graphs"] <= k, dict(counters["stats"])
    assert not counters["graph_break"], dict(counters["graph_break"])
