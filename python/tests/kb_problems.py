"""Small KernelBench-style problems written for these tests (never corpus code).

Each reference defines Model, get_inputs and get_init_inputs the way KernelBench files do;
candidates define ModelNew. `module(code)` runs a source in the test process so a test can
compute the expected values itself.
"""

import types

ADD = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """out = x + alpha * y * scale, with a float scalar input."""

    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        return x + self.alpha * y * scale


ROWS = 4
COLS = 8
SIZE = ROWS * COLS


def get_inputs():
    return [torch.randn(ROWS, COLS), torch.randn(ROWS, COLS), 0.5]


def get_init_inputs():
    return [3.0]
'''

ADD_CANDIDATE = ADD.replace("class Model(", "class ModelNew(")

LINEAR = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """softmax(fc(x)) over the last dim."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)

    def forward(self, x):
        return torch.softmax(self.fc(x), dim=-1)


BATCH = 5
D_IN = 6
D_OUT = 7


def get_inputs():
    return [torch.randn(BATCH, D_IN)]


def get_init_inputs():
    return [D_IN, D_OUT]
'''

# Same parameter names for fc, one extra parameter, and a different init order: the weight copy
# must make it agree with the reference anyway.
LINEAR_CANDIDATE = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.unused = nn.Parameter(torch.randn(3))
        self.fc = nn.Linear(d_in, d_out)

    def forward(self, x):
        z = x @ self.fc.weight.t() + self.fc.bias
        z = z - z.max(dim=-1, keepdim=True).values
        e = z.exp()
        return e / e.sum(dim=-1, keepdim=True)
'''

# Its weights are inference tensors (built under torch.inference_mode(), as cuda_l1's
# EfficientNetB2 candidate does to fold its batch norms): copy_() on them outside inference mode
# raises, so the weight copy must enter it.
LINEAR_INFERENCE_CANDIDATE = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        with torch.inference_mode():
            self.fc = nn.Linear(d_in, d_out)

    def forward(self, x):
        return torch.softmax(self.fc(x), dim=-1)
'''

XENT = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Cross entropy with integer class targets (a 0-d output)."""

    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        return F.cross_entropy(logits, targets)


BATCH = 6
CLASSES = 5


def get_inputs():
    return [torch.randn(BATCH, CLASSES), torch.randint(0, CLASSES, (BATCH,))]


def get_init_inputs():
    return []
'''

MULTI = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """Two outputs: row sums (float) and row argmax (int64)."""

    def forward(self, x):
        return x.sum(dim=1), x.argmax(dim=1)


def get_inputs():
    return [torch.randn(3, 4)]


def get_init_inputs():
    return []
'''

HALF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """A bf16 problem: x * 2 + 1."""

    def forward(self, x):
        return x * 2 + 1


def get_inputs():
    return [torch.randn(4, 4).to(torch.bfloat16)]


def get_init_inputs():
    return []
'''

HALF_CANDIDATE = HALF.replace("class Model(", "class ModelNew(")

# A Triton candidate for ADD: runs in Triton's interpreter when the worker has no GPU.
ADD_TRITON = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, n, coef, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + coef * y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        axpy_kernel[(triton.cdiv(n, 16),)](x, y, out, n, self.alpha * scale, BLOCK=16)
        return out
'''

# Candidate whose behaviour is picked by x[0, 0] (one worker covers every bad-output case).
CHOOSY = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y, scale):
        pick = int(x[0, 0].item())
        good = x + self.alpha * y * scale
        if pick == 1:
            return 3.5
        if pick == 2:
            return None
        if pick == 3:
            return good[:2]
        if pick == 4:
            return good.double()
        if pick == 5:
            return (good, good)
        if pick == 6:
            return [good, "extra"]
        if pick == 7:
            raise ValueError("pick 7 is not supported")
        return good
'''


def module(code: str) -> types.ModuleType:
    m = types.ModuleType("kb_problem_under_test")
    exec(compile(code, "<kb problem>", "exec"), m.__dict__)  # our own test sources
    return m
