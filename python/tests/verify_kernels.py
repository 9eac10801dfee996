"""Candidate callables for test_verify.py, in their own light module: kcv.verify pickles a
candidate by reference, and its worker imports this module (not the test file)."""

import torch


def softmax_reference(x):
    return torch.softmax(x, dim=-1)


def softmax_by_hand(x):
    """Correct: max-subtracted exponentials over their sum."""
    e = torch.exp(x - x.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)


def relu_reference(x):
    return torch.relu(x)


def relu_in_place(x):
    """Mutates its input."""
    return torch.relu_(x).clone()


def tanh_reference(x):
    return torch.tanh(x)


def tanh_nan_to_zero(x):
    """Drops NaN."""
    return torch.nan_to_num(torch.tanh(x), nan=0.0)


def matmul_reference(a, b):
    return a @ b


def matmul_bf16(a, b):
    """Silent downcast: multiplies in bfloat16, returns float32."""
    return (a.bfloat16() @ b.bfloat16()).float()


def softmax_raises(x):
    """Raises on every call."""
    raise ValueError("not implemented for this shape")


def softmax_wrong_shape(x):
    """Returns one row too few."""
    return torch.softmax(x, dim=-1)[:-1]
