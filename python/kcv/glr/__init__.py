"""kcv.glr: the gated linear recurrences on kcv's kernels, with fla 0.6's op signatures.

Training (chunk) ops and decode (fused_recurrent) ops for the six members, each taking fla 0.6's
arguments and returning (o, final_state):

    member          chunk op                                  decode op
    Gated DeltaNet  chunk_gated_delta_rule (alias chunk_gdn)  fused_recurrent_gated_delta_rule
                                                              (alias fused_recurrent_gdn)
    KDA             chunk_kda                                 fused_recurrent_kda
    DeltaNet        chunk_delta_rule                          fused_recurrent_delta_rule
    GLA             chunk_gla                                 fused_recurrent_gla
    simple GLA/SSD  chunk_simple_gla                          fused_recurrent_simple_gla
    linear attn.    chunk_linear_attn (normalize=True)        fused_recurrent_linear_attn

fla's in-kernel options run here before the recurrence, with fla's definitions
(use_qk_l2norm_in_kernel, use_beta_sigmoid_in_kernel, allow_neg_eigval, use_gate_in_kernel with
A_log / dt_bias / lower_bound); see _prologue.py. l2norm is fla's x·rsqrt(Σx² + 1e-6).

Where it runs:
  * CPU tensors (float16, bfloat16, float32, float64; K, V ≤ 256): fp64 code in kcv._glr — the
    chunked reference for chunk ops (with the caller's chunk_size), the token-serial oracle for
    decode ops; results are cast back to q's dtype, states come back in float32 (float64 for
    float64 input). Autograd works on both.
  * CUDA tensors: the sm_90a chunk kernels (bfloat16 q/k/v, K, V ≤ 128, chunk size 64), and for
    decode ops without gradients the token-serial decode kernel (fp32, K, V ≤ 256).

Bad input raises ValueError / TypeError naming the argument. What kcv does not implement by design
raises NotImplementedError naming the option: cp_context, return_intermediate_states, KDA's
use_graph, gv, reverse, and the CUDA limits above. `import kcv.glr.fla` registers these ops as
an fla backend (see kcv/glr/fla.py).

Precision grade: every chunk op takes precision="fp32" (the CUDA-core kernels) or "bf16" (fla's
precision class: on CUDA the tensor-core kernels for every member at K = V = 128 with bf16
q/k/v and β, else the CUDA-core kernels); without it, the process-wide
default of set_precision() ("fp32" unless set), which fla's layers get. On the CPU both grades
run the fp64 reference. See _precision.py and docs/glr/fla-api.md.

Kept forward pieces: a tensor-core forward that needs a gradient keeps what its backward reads
(the chunk states, A^qk and, under the delta rule, W, U, T and Δ) so the backward skips its
recompute, under the policy of set_keep_forward(): "auto" (the default; while the kept part is at
most 1/16 of the device's memory), "always" or "never". The gradients are the same bits either
way. See _keep.py.

Every op ends in the torch custom ops kcv_glr::forward / kcv_glr::backward (_autograd.py), so it
traces under torch.compile; on CUDA, with cu_seqlens_cpu (or without cu_seqlens), a forward and
backward wait for nothing on the host and capture in a CUDA graph (docs/glr/fla-api.md).
"""

from kcv.glr._keep import POLICIES as KEEP_POLICIES
from kcv.glr._keep import get_keep_forward, set_keep_forward
from kcv.glr._native import (MAX_CPU_HEAD_DIM, MAX_DECODE_HEAD_DIM, MAX_HEAD_DIM, has_cuda)
from kcv.glr._precision import GRADES, get_precision, set_precision
from kcv.glr._prologue import l2norm
from kcv.glr.delta_rule import (chunk_delta_rule, chunk_gated_delta_rule, chunk_gdn, chunk_kda,
                                fused_recurrent_delta_rule, fused_recurrent_gated_delta_rule,
                                fused_recurrent_gdn, fused_recurrent_kda)
from kcv.glr.gla import (chunk_gla, chunk_simple_gla, fused_recurrent_gla,
                         fused_recurrent_simple_gla)
from kcv.glr.linear_attn import chunk_linear_attn, fused_recurrent_linear_attn

__all__ = [
    "chunk_gated_delta_rule", "chunk_gdn", "chunk_kda", "chunk_delta_rule", "chunk_gla",
    "chunk_simple_gla", "chunk_linear_attn",
    "fused_recurrent_gated_delta_rule", "fused_recurrent_gdn", "fused_recurrent_kda",
    "fused_recurrent_delta_rule", "fused_recurrent_gla", "fused_recurrent_simple_gla",
    "fused_recurrent_linear_attn",
    "l2norm", "has_cuda", "MAX_HEAD_DIM", "MAX_DECODE_HEAD_DIM", "MAX_CPU_HEAD_DIM",
    "set_precision", "get_precision", "GRADES",
    "set_keep_forward", "get_keep_forward", "KEEP_POLICIES",
]
