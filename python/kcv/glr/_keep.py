"""Whether a chunk op's forward keeps its pieces for the backward (the tensor-core kernels).

The tensor-core backward reads what the forward computed: A^qk, the gate factors, the state
entering every chunk and, under the delta rule, W, U, T and Δ (glr/dev/chunked_mma_backward.hpp,
MmaBackwardWorkspace's kept part). Either the forward keeps them in a buffer that lives until the
backward, which then starts at its dH scan, or the backward recomputes them from the saved
inputs: two launches more, 0.23 to 0.25 ms (LA, SSD) and 0.48 to 0.51 ms (DeltaNet, GDN) of
forward + backward at B1·T8192·H32·D128 on one H200 (docs/glr/tensor-core-backward.md, the
"training step" column). The gradients are the same bits
either way (glr_dev_tests' ChunkedMmaBackwardKept; python/tests/test_glr_precision.py on a GPU).
Keeping costs memory held from the forward to the backward: at B1·T8192·H32·D128, 172 MB for LA
and SSD, 409 MB for DeltaNet and GDN, beside 201 MB of q, k and v (kept_bytes).

  "auto"    the default: keeps when the call needs a gradient and the kept part takes at most
            1/16 of the device's memory
  "always"  keeps whenever the call needs a gradient
  "never"   never keeps: the backward recomputes

set_keep_forward() sets the policy process-wide. Like the grade, run() resolves it before the op
("never" for a call without a gradient) and it crosses into kcv_glr::forward as a static string;
the op's real and fake implementations decide from it with keeps(), so torch.compile sees the
kept buffer's shape. Other kernels (the CUDA-core ones, the CPU reference) keep nothing.
"""

from __future__ import annotations

import torch

from kcv import _glr
from kcv.glr._validate import check_choice

#: The policies set_keep_forward takes.
POLICIES = ("auto", "always", "never")
#: "auto" keeps while the kept part is at most this fraction of the device's memory.
AUTO_FRACTION = 1 / 16

_policy = "auto"


def check_policy(policy, name="keep"):
    return check_choice(name, policy, POLICIES)


def set_keep_forward(policy: str) -> str:
    """Sets the process-wide policy ("auto", "always" or "never"); returns the previous one."""
    global _policy
    previous, _policy = _policy, check_policy(policy)
    return previous


def get_keep_forward() -> str:
    """The process-wide policy."""
    return _policy


def resolve(needs_grad):
    """The policy of one call: "never" when no input needs a gradient."""
    return _policy if needs_grad else "never"


def kept_bytes(member, gdims):
    """Bytes of the kept part at the launcher dims (B, T, H, HV, K, V, N)."""
    return _glr.mma_workspace_bytes(_glr.MmaWorkspace.KEPT, member, gdims)


def keeps(policy, member, gdims, device):
    """Whether a tensor-core forward under `policy` keeps its pieces."""
    check_policy(policy)
    if policy == "never":
        return False
    if policy == "always":
        return True
    total = torch.cuda.get_device_properties(device).total_memory
    return kept_bytes(member, gdims) <= AUTO_FRACTION * total
