"""The token layout of a batch (bert.model.padding): unpadding, padding back, and the row gather's gradient."""

import torch

from bert.model.padding import TokenLayout, gather_rows, pad, unpad


def test_pad_and_unpad_are_inverse():
    layout = TokenLayout.from_lengths(torch.tensor([3, 1, 4]), 4)
    x = torch.arange(12.0).view(3, 4, 1)
    tokens = unpad(x, layout)
    assert tokens.flatten().tolist() == [0, 1, 2, 4, 8, 9, 10, 11]
    assert layout.cu_seqlens.tolist() == [0, 3, 4, 8]
    back = pad(tokens, layout)
    assert torch.equal(back[0, :3], x[0, :3]) and back[1, 1:].abs().sum() == 0


def test_gather_rows_gradient_equals_index_select():
    x = torch.randn(10, 3, dtype=torch.float64, requires_grad=True)
    index = torch.tensor([7, 2, 0, 5])
    weights = torch.randn(4, 3, dtype=torch.float64)
    (gather_rows(x, index) * weights).sum().backward()
    fast = x.grad.clone()
    x.grad = None
    (x.index_select(0, index) * weights).sum().backward()
    assert torch.equal(fast, x.grad)
    assert torch.autograd.gradcheck(lambda t: gather_rows(t, index), (x,))
