"""The delta-rule members with fla 0.6's signatures: Gated DeltaNet (chunk_gated_delta_rule, alias
chunk_gdn), KDA (chunk_kda) and DeltaNet (chunk_delta_rule), and their decode ops
fused_recurrent_gated_delta_rule (alias fused_recurrent_gdn), fused_recurrent_kda and
fused_recurrent_delta_rule. Every op returns (o, final_state or None)."""

from __future__ import annotations

import torch

from kcv.glr import _options
from kcv.glr._autograd import run
from kcv.glr._native import DELTANET, GDN, KDA
from kcv.glr._prologue import beta_prologue, check_safe_gate, gdn_gate, kda_gate, qk_l2norm


def chunk_gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None,
                           output_final_state=False, use_qk_l2norm_in_kernel=False,
                           use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False,
                           state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None,
                           chunk_indices=None, cp_context=None, *, precision=None, **kwargs):
    """Gated DeltaNet, fla.ops.gated_delta_rule.chunk_gated_delta_rule. kwargs: use_gate_in_kernel,
    A_log, dt_bias (the fused gate), chunk_size (16, 32, 64), transpose_state_layout. precision:
    "fp32", "bf16" or None (kcv.glr.set_precision's default)."""
    del chunk_indices
    state_v_first = _options.state_layout(state_v_first, kwargs)
    use_gate = bool(kwargs.pop("use_gate_in_kernel", False))
    A_log, dt_bias = kwargs.pop("A_log", None), kwargs.pop("dt_bias", None)
    chunk = _options.chunk_size(kwargs, {16, 32, 64})
    _options.finish(kwargs)
    _options.refuse("cp_context", cp_context)
    q, k = qk_l2norm(q, k, use_qk_l2norm_in_kernel)
    beta = beta_prologue(beta, use_beta_sigmoid_in_kernel, allow_neg_eigval)
    if use_gate:
        g = gdn_gate(g, A_log, dt_bias)
    return run(GDN, "chunk", q, k, v, g, beta, scale, initial_state, output_final_state,
               state_v_first, cu_seqlens, cu_seqlens_cpu, chunk, precision)


chunk_gdn = chunk_gated_delta_rule


def chunk_kda(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
              use_qk_l2norm_in_kernel=False, use_gate_in_kernel=False,
              use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False, safe_gate=False,
              lower_bound=None, disable_recompute=False, return_intermediate_states=False,
              state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None, cp_context=None,
              use_graph=False, max_num_seqs=None, *, precision=None, **kwargs):
    """Kimi Delta Attention, fla.ops.kda.chunk_kda; g is the per-channel log-decay [B, T, HV, K]
    (the raw gate input with use_gate_in_kernel). kwargs: A_log, dt_bias, chunk_size (32, 64),
    transpose_state_layout. safe_gate and disable_recompute choose fla's kernels and change
    nothing here beyond fla's lower_bound check; max_num_seqs matters only with use_graph.
    precision: "fp32", "bf16" or None (the default)."""
    del disable_recompute, max_num_seqs
    state_v_first = _options.state_layout(state_v_first, kwargs)
    A_log, dt_bias = kwargs.pop("A_log", None), kwargs.pop("dt_bias", None)
    chunk = _options.chunk_size(kwargs, {32, 64})
    _options.finish(kwargs)
    _options.refuse("return_intermediate_states", return_intermediate_states, False)
    _options.refuse("cp_context", cp_context)
    if use_graph:
        raise NotImplementedError("use_graph: fla's padded graph-capture layout (zero-length "
                                  "tail sequences) is not supported by kcv.glr")
    check_safe_gate(safe_gate, use_gate_in_kernel, lower_bound)
    q, k = qk_l2norm(q, k, use_qk_l2norm_in_kernel)
    beta = beta_prologue(beta, use_beta_sigmoid_in_kernel, allow_neg_eigval)
    if use_gate_in_kernel:
        g = kda_gate(g, A_log, dt_bias, lower_bound)
    return run(KDA, "chunk", q, k, v, g, beta, scale, initial_state, output_final_state,
               state_v_first, cu_seqlens, cu_seqlens_cpu, chunk, precision)


def chunk_delta_rule(q, k, v, beta, scale=None, initial_state=None, output_final_state=False,
                     use_qk_l2norm_in_kernel=False, cu_seqlens=None, cu_seqlens_cpu=None, *,
                     precision=None, **kwargs):
    """DeltaNet, fla.ops.delta_rule.chunk_delta_rule. kwargs: chunk_size (16, 32, 64),
    state_v_first / transpose_state_layout (a kcv extension; fla's DeltaNet has [K, V] only).
    precision: "fp32", "bf16" or None (the default)."""
    state_v_first = _options.state_layout(kwargs.pop("state_v_first", False), kwargs)
    chunk = _options.chunk_size(kwargs, {16, 32, 64})
    _options.finish(kwargs)
    q, k = qk_l2norm(q, k, use_qk_l2norm_in_kernel)
    return run(DELTANET, "chunk", q, k, v, None, beta, scale, initial_state, output_final_state,
               state_v_first, cu_seqlens, cu_seqlens_cpu, chunk, precision)


def _ones_beta(q, v):
    return torch.ones(v.shape[:3], dtype=q.dtype, device=q.device)


def fused_recurrent_gated_delta_rule(q, k, v, g=None, gk=None, gv=None, beta=None, scale=None,
                                     initial_state=None, output_final_state=False,
                                     use_qk_l2norm_in_kernel=False, use_gate_in_kernel=False,
                                     A_log=None, dt_bias=None, use_beta_sigmoid_in_kernel=False,
                                     allow_neg_eigval=False, state_v_first=False,
                                     cu_seqlens=None, **kwargs):
    """Decode op of Gated DeltaNet, fla.ops.gated_delta_rule.fused_recurrent_gated_delta_rule.
    g [B, T, HV] runs GDN, gk [B, T, HV, K] runs KDA, neither runs DeltaNet; beta defaults to 1.
    kwargs: cu_seqlens_cpu, transpose_state_layout."""
    state_v_first, cu_seqlens_cpu = _options.decode_options(state_v_first, kwargs)
    if gv is not None:
        raise NotImplementedError("gv: a value-side gate is not supported by kcv.glr")
    if g is not None and gk is not None:
        raise NotImplementedError("gk: g and gk together are not supported by kcv.glr "
                                  "(one gate per call)")
    if use_gate_in_kernel:
        if g is None:
            raise ValueError("g: required (the raw gate input) when use_gate_in_kernel=True")
        g = gdn_gate(g, A_log, dt_bias)
    if beta is None and isinstance(q, torch.Tensor) and isinstance(v, torch.Tensor):
        beta = _ones_beta(q, v)
    q, k = qk_l2norm(q, k, use_qk_l2norm_in_kernel)
    beta = beta_prologue(beta, use_beta_sigmoid_in_kernel, allow_neg_eigval)
    member, gate = (GDN, g) if g is not None else ((KDA, gk) if gk is not None else (DELTANET, None))
    return run(member, "recurrent", q, k, v, gate, beta, scale, initial_state, output_final_state,
               state_v_first, cu_seqlens, cu_seqlens_cpu)


fused_recurrent_gdn = fused_recurrent_gated_delta_rule


def fused_recurrent_kda(q, k, v, g, beta, A_log=None, dt_bias=None, scale=None,
                        initial_state=None, output_final_state=False,
                        use_qk_l2norm_in_kernel=False, use_gate_in_kernel=False,
                        use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False,
                        lower_bound=None, state_v_first=False, cu_seqlens=None, **kwargs):
    """Decode op of KDA, fla.ops.kda.fused_recurrent_kda. kwargs: cu_seqlens_cpu,
    transpose_state_layout."""
    state_v_first, cu_seqlens_cpu = _options.decode_options(state_v_first, kwargs)
    q, k = qk_l2norm(q, k, use_qk_l2norm_in_kernel)
    beta = beta_prologue(beta, use_beta_sigmoid_in_kernel, allow_neg_eigval)
    if use_gate_in_kernel:
        g = kda_gate(g, A_log, dt_bias, lower_bound)
    return run(KDA, "recurrent", q, k, v, g, beta, scale, initial_state, output_final_state,
               state_v_first, cu_seqlens, cu_seqlens_cpu)


def fused_recurrent_delta_rule(q, k, v, beta=None, scale=None, initial_state=None,
                               output_final_state=False, use_qk_l2norm_in_kernel=False,
                               cu_seqlens=None):
    """Decode op of DeltaNet, fla.ops.delta_rule.fused_recurrent_delta_rule; beta defaults
    to 1."""
    if beta is None and isinstance(q, torch.Tensor) and isinstance(v, torch.Tensor):
        beta = _ones_beta(q, v)
    q, k = qk_l2norm(q, k, use_qk_l2norm_in_kernel)
    return run(DELTANET, "recurrent", q, k, v, None, beta, scale, initial_state,
               output_final_state, False, cu_seqlens, None)
