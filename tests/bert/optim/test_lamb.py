import math
import subprocess
import sys

import pytest
import torch

from bert.optim.factory import excluded_from_weight_decay, parameter_groups
from bert.optim.lamb import Lamb
from tests.helpers.compile import skip_unless_compile_works
from tests.helpers.repo import REPO


def _reference_lamb(w, grads, lr, b1, b2, eps, wd, adapt):
    """Hand-written per-element LAMB of the MLPerf reference, in plain Python floats."""
    w = list(w)
    m = [0.0] * len(w)
    v = [0.0] * len(w)
    for t, g in enumerate(grads, start=1):
        m = [b1 * mi + (1 - b1) * gi for mi, gi in zip(m, g)]
        v = [b2 * vi + (1 - b2) * gi * gi for vi, gi in zip(v, g)]
        upd = [(mi / (1 - b1**t)) / (math.sqrt(vi / (1 - b2**t)) + eps) + wd * wi
               for mi, vi, wi in zip(m, v, w)]
        ratio = 1.0
        if adapt:
            wn, un = math.sqrt(sum(x * x for x in w)), math.sqrt(sum(x * x for x in upd))
            ratio = wn / un if wn > 0 and un > 0 else 1.0
        w = [wi - lr * ratio * ui for wi, ui in zip(w, upd)]
    return w


# The reference adapts by name whatever the decay: a decay of 0 keeps the trust ratio (adapt=True).
@pytest.mark.parametrize("wd, adapt", [(0.01, True), (0.0, True), (0.0, False)])
def test_lamb_matches_hand_computed_steps(wd, adapt):
    w0 = [0.5, -1.0, 2.0, 0.25]
    grads = [[0.1, -0.2, 0.3, 0.0], [-0.05, 0.4, 0.1, 0.2], [0.3, 0.3, -0.3, 0.1]]
    p = torch.nn.Parameter(torch.tensor(w0, dtype=torch.float64))
    opt = Lamb([{"params": [p], "weight_decay": wd, "layer_adaptation": adapt}], lr=0.1, betas=(0.9, 0.999),
               eps=1e-6)
    for g in grads:
        p.grad = torch.tensor(g, dtype=torch.float64)
        opt.step()
    expected = _reference_lamb(w0, grads, 0.1, 0.9, 0.999, 1e-6, wd, adapt=adapt)
    assert p.detach().tolist() == pytest.approx(expected, rel=1e-12)


def test_a_group_is_adapted_unless_it_says_otherwise():
    assert Lamb([torch.nn.Parameter(torch.ones(2))], lr=0.1, weight_decay=0.0).param_groups[0]["layer_adaptation"]


def test_first_lamb_step_has_the_trust_ratio_size():
    # At step 1 the Adam direction is sign(g) (up to eps), so the update norm is lr * ||w||.
    p = torch.nn.Parameter(torch.tensor([3.0, 4.0], dtype=torch.float64))
    p.grad = torch.tensor([1.0, -2.0], dtype=torch.float64)
    Lamb([{"params": [p], "weight_decay": 1e-12}], lr=0.1, eps=0.0).step()
    assert torch.linalg.norm(p.detach() - torch.tensor([3.0, 4.0], dtype=torch.float64)).item() == \
        pytest.approx(0.5, rel=1e-9)


def test_bias_and_layer_norm_are_excluded_from_decay():
    assert excluded_from_weight_decay("bert.encoder.0.attention.qkv.bias")
    assert excluded_from_weight_decay("bert.encoder.3.layer_norm.weight")
    assert excluded_from_weight_decay("mlm.bias")
    assert not excluded_from_weight_decay("bert.encoder.0.attention.qkv.weight")
    assert not excluded_from_weight_decay("bert.embeddings.word_embeddings.weight")
    model = torch.nn.Sequential()
    model.add_module("dense", torch.nn.Linear(2, 2))
    model.add_module("layer_norm", torch.nn.LayerNorm(2))
    for rate in (0.01, 0.0):  # adaptation follows the names, not the decay rate
        decay, no_decay = parameter_groups(model, rate)
        assert len(decay["params"]) == 1 and decay["weight_decay"] == rate and decay["layer_adaptation"]
        assert len(no_decay["params"]) == 3 and no_decay["weight_decay"] == 0.0 and not no_decay["layer_adaptation"]


def test_the_exclusions_are_the_references_rule_on_its_tf_names():
    """lamb_optimizer_v1 excludes a variable when re.search finds LayerNorm, layer_norm or bias in its name."""
    import re

    from bert.model.config import named_config
    from bert.model.tf_names import tensor_names

    for entry in tensor_names(named_config("large")):
        reference = any(re.search(p, entry.tf) for p in ("LayerNorm", "layer_norm", "bias"))
        assert excluded_from_weight_decay(entry.torch) == reference, entry


def _fused_and_apart(parts: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """Three tensors of different norms stepped apart, and stacked as one parameter with `parts` (3 steps)."""
    torch.manual_seed(0)
    apart = [torch.nn.Parameter(torch.randn(4, 3, dtype=torch.float64) * scale) for scale in (1.0, 5.0, 0.2)]
    fused = torch.nn.Parameter(torch.cat([p.detach() for p in apart]))
    optimizers = (Lamb([{"params": apart, "weight_decay": 0.01}], lr=0.1),
                  Lamb([{"params": [fused], "parts": parts, "weight_decay": 0.01}], lr=0.1))
    for _ in range(3):
        grads = [torch.randn(4, 3, dtype=torch.float64) for _ in apart]
        for p, g in zip(apart, grads):
            p.grad = g
        fused.grad = torch.cat(grads)
        for opt in optimizers:
            opt.step()
    return fused.detach(), torch.cat([p.detach() for p in apart])


def test_a_fused_parameter_gets_one_trust_ratio_per_reference_tensor():
    # The fused query/key/value steps exactly as the reference's three variables do apart ...
    fused, apart = _fused_and_apart(parts=[3])
    torch.testing.assert_close(fused, apart, rtol=1e-14, atol=0)
    # ... which one trust ratio for the stacked tensor would not.
    fused_whole, apart = _fused_and_apart(parts=[1])
    assert not torch.allclose(fused_whole, apart, rtol=1e-6)


def test_the_models_parameter_groups_say_which_parameters_stack_reference_tensors():
    from bert.model.config import named_config
    from bert.model.pretraining import BertForPreTraining

    with torch.device("meta"):
        model = BertForPreTraining(named_config("micro", num_layers=2))
    names = {p: n for n, p in model.named_parameters()}
    for group in parameter_groups(model, 0.01):
        stacked = {names[p] for p, n in zip(group["params"], group["parts"], strict=True) if n == 3}
        suffix = "weight" if group["weight_decay"] else "bias"
        assert stacked == {f"bert.encoder.{i}.attention.qkv.{suffix}" for i in range(2)}


def _lamb_pair(grads_per_step, overflow_at: set[int]):
    """A decayed and an undecayed tensor stepped through `grads_per_step`; at the steps in `overflow_at` the
    optimizer gets GradScaler's overflow flag set (and a gradient with inf and NaN in it)."""
    w, b = (torch.nn.Parameter(torch.tensor(x, dtype=torch.float64)) for x in ([0.5, -1.0, 2.0], [0.1, 0.2, 0.3]))
    opt = Lamb([{"params": [w], "weight_decay": 0.01}, {"params": [b], "weight_decay": 0.0}], lr=0.1)
    for k, g in enumerate(grads_per_step):
        overflow = k in overflow_at
        for p in (w, b):
            p.grad = torch.tensor([math.inf, math.nan, 1.0] if overflow else g, dtype=torch.float64)
        opt.found_inf = torch.tensor(1.0 if overflow else 0.0)  # as GradScaler.step hands it over
        opt.step()
        del opt.found_inf
    return w, b, opt


def test_an_overflowed_step_leaves_weights_moments_and_step_count_as_they_were():
    grads = [[0.1, -0.2, 0.3], [-0.05, 0.4, 0.1]]
    reference = _lamb_pair(grads, overflow_at=set())
    # Overflows before the first step (no moments yet) and between the two real steps change nothing.
    skipped = _lamb_pair([grads[0], grads[0], grads[0], grads[1]], overflow_at={0, 2})
    for ref, got in zip(reference[:2], skipped[:2]):
        assert got.detach().tolist() == pytest.approx(ref.detach().tolist(), rel=1e-15, abs=0)
    for p_ref, p_got in zip(reference[:2], skipped[:2]):
        ref_state, state = reference[2].state[p_ref], skipped[2].state[p_got]
        assert state["step"].item() == ref_state["step"].item() == 2
        assert torch.equal(state["exp_avg"], ref_state["exp_avg"])
        assert torch.equal(state["exp_avg_sq"], ref_state["exp_avg_sq"])


def test_grad_scaler_steps_lamb_without_reading_the_overflow_flag_back(monkeypatch):
    """GradScaler reads its overflow flag with .item() unless the optimizer takes the flag itself."""
    p = torch.nn.Parameter(torch.tensor([0.5, -1.0, 2.0]))
    opt = Lamb([{"params": [p], "weight_decay": 0.01}], lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)

    def host_read(self, *args, **kwargs):
        raise AssertionError("GradScaler read a tensor back to the host")

    monkeypatch.setattr(torch.Tensor, "item", host_read)
    for grad in ([1.0, 2.0, math.inf], [0.1, -0.2, 0.3]):
        before = p.detach().clone()
        scaler.scale(p * torch.tensor(grad)).sum().backward()  # d/dp = grad * scale
        scaler.unscale_(opt)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        assert torch.equal(p.detach(), before) == (grad[-1] == math.inf)
    monkeypatch.undo()
    assert scaler.get_scale() == 512.0 and torch.isfinite(p).all()


def _stepped(compiled: bool, overflow_at: set[int]) -> tuple[list[torch.Tensor], Lamb]:
    """A decayed group of two tensors, an undecayed but adapted one and one with neither (bias and LayerNorm), 5
    steps with a new learning rate each; at the steps in `overflow_at` GradScaler's overflow flag is set (with a
    scale: the gradient is still scaled)."""
    torch.manual_seed(0)
    weights = [torch.nn.Parameter(torch.randn(*shape)) for shape in ((8, 4), (16,), (4,), (6,))]
    opt = Lamb([{"params": weights[:2], "weight_decay": 0.01}, {"params": weights[2:3], "weight_decay": 0.0},
                {"params": weights[3:], "weight_decay": 0.0, "layer_adaptation": False}],
               lr=0.1, eps=1e-6, compiled=compiled)
    for step in range(5):
        for w in weights:
            w.grad = torch.randn_like(w) * 64
        if overflow_at:
            opt.found_inf = torch.tensor(float(step in overflow_at))
            opt.grad_scale = torch.tensor(64.0)
        for group in opt.param_groups:
            group["lr"] = 0.1 / (step + 1)
        opt.step()
    return [w.detach() for w in weights], opt


@pytest.mark.parametrize("overflow_at", [set(), {1, 3}], ids=["bf16-fp32", "fp16 with overflows"])
def test_compiled_lamb_equals_the_eager_reference_and_compiles_once_per_group(overflow_at):
    skip_unless_compile_works()
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    eager, _ = _stepped(False, overflow_at)
    compiled, opt = _stepped(True, overflow_at)
    for a, b in zip(compiled, eager):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
    assert counters["stats"]["unique_graphs"] == 3, dict(counters["stats"])  # not once per learning rate
    assert all(float(s["step"]) == 5 - len(overflow_at) for s in opt.state.values())


def test_lamb_in_a_run_that_compiles_nothing_never_imports_dynamo():
    # torch.optim.Optimizer's own methods import torch._dynamo on their first call (2.5 to 3 s of a process's start).
    script = """
import sys
import torch
from bert.optim.lamb import Lamb
w = torch.nn.Parameter(torch.ones(4))
groups = [{"params": [w]}, {"params": [torch.nn.Parameter(torch.ones(2))], "layer_adaptation": False}]
opt = Lamb(groups, lr=0.1)
w.grad = torch.full((4,), 0.5)
opt.step()
state = opt.state_dict()
opt.zero_grad()
again = Lamb([{"params": [w]}, {"params": groups[1]["params"], "layer_adaptation": False}], lr=0.1)
again.load_state_dict(state)
assert w.grad is None and torch.allclose(again.state_dict()["state"][0]["exp_avg"], torch.full((4,), 0.05))
print("dynamo imported" if "torch._dynamo" in sys.modules else "no dynamo")
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0 and proc.stdout.strip() == "no dynamo", proc.stdout + proc.stderr[-2000:]
