"""bert::varlen_attention (bert/model/varlen_attention.py): its math reference against the padded path the CPU trains
with, its dropout and autograd formula against a direct composition, torch.compile seeing it as one operator,
and, on a GPU (acceptance/gpu_check.sh runs these), the flash kernel against the reference."""

import pytest
import torch
import torch.nn.functional as F

from bert.data.batch import collate_packed
from bert.model.attention import unpadded_attention
from bert.model.padding import TokenLayout
from bert.model.varlen_attention import _keep_masks, flash_kernel_usable, varlen_attention
from tests.helpers.samples import LENGTHS, make_samples

HEADS, HEAD_SIZE = 2, 8


def _layouts() -> dict[str, TokenLayout]:
    return {"right-padded": TokenLayout.from_lengths(torch.tensor([5, 1, 12, 3, 8]), 16),
            "packed rows": collate_packed(make_samples(LENGTHS), 48).layout}


def _qkv(layout: TokenLayout, dtype=torch.float64, device="cpu") -> torch.Tensor:
    return torch.randn(layout.num_tokens, 3, HEADS, HEAD_SIZE, dtype=dtype, device=device, requires_grad=True)


def _op(qkv: torch.Tensor, layout: TokenLayout, dropout_p: float) -> torch.Tensor:
    return varlen_attention(*qkv.unbind(1), layout.cu_seqlens.to(qkv.device), layout.max_len, dropout_p)


@pytest.mark.parametrize("name", ["right-padded", "packed rows"])
def test_the_reference_equals_the_padded_path_of_the_cpu_without_dropout(name):
    torch.manual_seed(0)
    layout = _layouts()[name]
    qkv = _qkv(layout)
    # The CPU trains through the padded path; the operator is the reference.
    assert not flash_kernel_usable(qkv.device, HEAD_SIZE)
    padded, ours = unpadded_attention(qkv, layout, 0.0), _op(qkv, layout, 0.0)
    torch.testing.assert_close(ours, padded, rtol=1e-12, atol=1e-12)
    grad = torch.randn_like(ours)
    torch.testing.assert_close(torch.autograd.grad(ours, qkv, grad)[0], torch.autograd.grad(padded, qkv, grad)[0],
                               rtol=1e-10, atol=1e-12)


def _composed(qkv: torch.Tensor, layout: TokenLayout, keeps: list[torch.Tensor], dropout_p: float) -> torch.Tensor:
    """Dropout on the softmax probabilities of each sequence, with the given masks, by plain autograd ops."""
    q, k, v = qkv.unbind(1)
    bounds = layout.cu_seqlens.tolist()
    outs = []
    for start, end, keep in zip(bounds[:-1], bounds[1:], keeps):
        scores = torch.einsum("qhd,khd->hqk", q[start:end], k[start:end]) / HEAD_SIZE**0.5
        probabilities = torch.softmax(scores, -1) * keep / (1 - dropout_p)
        outs.append(torch.einsum("hqk,khd->qhd", probabilities, v[start:end]))
    return torch.cat(outs)


def test_dropout_drops_probabilities_with_a_mask_the_backward_replays():
    torch.manual_seed(1)
    layout, dropout_p = _layouts()["right-padded"], 0.25
    qkv = _qkv(layout)
    out, _, rng_state = torch.ops.bert.varlen_attention(*qkv.unbind(1), layout.cu_seqlens, layout.max_len, dropout_p)
    keeps = list(_keep_masks(layout.cu_seqlens, HEADS, dropout_p, int(rng_state[0])))
    kept = torch.cat([keep.flatten() for keep in keeps]).double().mean()
    assert abs(float(kept) - (1 - dropout_p)) < 0.05, kept
    expected = _composed(qkv, layout, keeps, dropout_p)
    torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-12)
    grad = torch.randn_like(out)
    torch.testing.assert_close(torch.autograd.grad(out, qkv, grad)[0], torch.autograd.grad(expected, qkv, grad)[0],
                               rtol=1e-10, atol=1e-12)
    again, _, other_state = torch.ops.bert.varlen_attention(*qkv.unbind(1), layout.cu_seqlens, layout.max_len,
                                                            dropout_p)
    assert not torch.equal(other_state, rng_state) and not torch.allclose(again, out)  # a new mask each call


def test_torch_compile_sees_one_operator_with_its_autograd_formula():
    torch.manual_seed(2)
    layout = _layouts()["right-padded"]
    qkv = _qkv(layout)
    graphs = []

    def backend(graph: torch.fx.GraphModule, example_inputs):
        graphs.append(graph)
        return torch._dynamo.backends.debugging.aot_eager(graph, example_inputs)

    compiled = torch.compile(lambda x: _op(x, layout, 0.0), backend=backend, fullgraph=True)
    out = compiled(qkv)
    grad = torch.randn_like(out)
    torch.testing.assert_close(out, _op(qkv, layout, 0.0), rtol=0, atol=0)
    torch.testing.assert_close(torch.autograd.grad(out, qkv, grad)[0],
                               torch.autograd.grad(_op(qkv, layout, 0.0), qkv, grad)[0], rtol=0, atol=0)
    calls = [node.target for node in graphs[0].graph.nodes if node.op == "call_function"]
    assert calls.count(torch.ops.bert.varlen_attention.default) == 1, calls


cuda = pytest.mark.skipif(not torch.cuda.is_available(),
                          reason="GPU-only: acceptance/gpu_check.sh runs them on a CUDA machine")


@cuda
def test_cuda_flash_kernel_equals_the_reference_in_bf16():
    torch.manual_seed(3)
    layout = TokenLayout.from_lengths(torch.tensor([512, 77, 300, 1, 129]), 512)
    qkv = _qkv(layout, torch.bfloat16, "cuda")
    assert flash_kernel_usable(qkv.device, HEAD_SIZE)
    host = qkv.detach().cpu().double().requires_grad_()
    flash, reference = _op(qkv, layout, 0.0), _op(host, layout, 0.0)
    torch.testing.assert_close(flash.double().cpu(), reference, rtol=2e-2, atol=2e-2)
    grad = torch.randn_like(flash)
    flash_grad = torch.autograd.grad(flash, qkv, grad)[0].double().cpu()
    reference_grad = torch.autograd.grad(reference, host, grad.double().cpu())[0]
    scale = reference_grad.abs().max().item()
    torch.testing.assert_close(flash_grad, reference_grad, rtol=5e-2, atol=2e-2 * scale)


@cuda
def test_cuda_flash_kernel_with_dropout_replays_its_mask_from_the_seed():
    layout = TokenLayout.from_lengths(torch.tensor([512, 200, 64]), 512)
    torch.manual_seed(4)
    qkv = _qkv(layout, torch.bfloat16, "cuda")
    results = []
    for _ in range(2):  # the same CUDA seed draws the same mask: forward and backward agree
        torch.cuda.manual_seed(5)
        out = _op(qkv, layout, 0.1)
        results.append((out, torch.autograd.grad(out.float().square().sum(), qkv)[0]))
    (a, grad_a), (b, grad_b) = results
    assert torch.equal(a, b)  # the forward replays the same mask and the same arithmetic
    # The backward too, but flash accumulates dQ in fp32 with atomic adds in no fixed order: the bf16 gradients
    # may differ by a rounding step, within 2 bf16 units in the last place (2^-7) of the largest gradient.
    torch.testing.assert_close(grad_a, grad_b, rtol=2**-7, atol=2**-7 * grad_a.abs().max().item())
    no_dropout = _op(qkv, layout, 0.0)
    assert not torch.equal(a, no_dropout)
    # Dropout keeps the expectation: the mean output over the sequence is close to the undropped one.
    assert F.cosine_similarity(a.float().flatten(), no_dropout.float().flatten(), dim=0) > 0.8
