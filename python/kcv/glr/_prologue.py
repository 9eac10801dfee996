"""fla's in-kernel conveniences, done before the recurrence with differentiable torch ops, with
fla 0.6's definitions:
  * l2norm(x) = x · rsqrt(Σ x² + 1e-6) over the last dim (fla.modules.l2norm), in float32 (or
    float64 for float64 input), returned in x's dtype;
  * use_beta_sigmoid_in_kernel: β = sigmoid(β), or 2·sigmoid(β) with allow_neg_eigval;
  * use_gate_in_kernel (GDN, scalar gate): g = −exp(A_log) · softplus(g + dt_bias), A_log and
    dt_bias [HV];
  * use_gate_in_kernel (KDA, per-channel gate): g = −exp(A_log)[:, None] · softplus(g + dt_bias)
    with dt_bias viewed as [HV, K] (or [HV, 1]); with lower_bound set instead
    g = lower_bound · sigmoid(exp(A_log) · (g + dt_bias)), A_log optional (a factor of 1).
Fused gates come out in float32 (float64 for float64 input), like fla's."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from kcv.glr._validate import check_float

L2NORM_EPS = 1e-6


def _work_dtype(t):
    return torch.float64 if t.dtype == torch.float64 else torch.float32


def l2norm(x: torch.Tensor, eps: float = L2NORM_EPS) -> torch.Tensor:
    """fla's l2norm: x · rsqrt(Σ x² + eps) over the last dimension, in x's dtype."""
    xf = x.to(_work_dtype(x))
    return (xf * torch.rsqrt((xf * xf).sum(-1, keepdim=True) + eps)).to(x.dtype).contiguous()


def qk_l2norm(q, k, enabled):
    if not enabled:
        return q, k
    return l2norm(q), l2norm(k)


def beta_prologue(beta, sigmoid, allow_neg_eigval):
    if allow_neg_eigval and not sigmoid:
        raise ValueError("allow_neg_eigval: requires use_beta_sigmoid_in_kernel=True")
    if not sigmoid or beta is None:
        return beta
    out = torch.sigmoid(beta.to(_work_dtype(beta)))
    return (out * 2.0 if allow_neg_eigval else out).contiguous()


def _param(name, t, numel_ok, device):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    check_float(name, t)
    if t.numel() not in numel_ok:
        raise ValueError(f"{name}: expected {' or '.join(map(str, sorted(numel_ok)))} elements, "
                         f"got shape {tuple(t.shape)}")
    if t.device != device:
        raise ValueError(f"{name}: on {t.device}, g on {device}")


def _check_raw_gate(g):
    if not isinstance(g, torch.Tensor):
        raise ValueError("g: required (the raw gate input) when use_gate_in_kernel=True")
    check_float("g", g)


def gdn_gate(g, A_log, dt_bias):
    """The scalar fused gate; g [B, T, HV] raw."""
    _check_raw_gate(g)
    if g.dim() != 3:
        raise ValueError(f"g: expected 3 dimensions [B, T, HV], got shape {tuple(g.shape)}")
    HV = g.shape[-1]
    if A_log is None:
        raise ValueError("A_log: required when use_gate_in_kernel=True")
    _param("A_log", A_log, {HV}, g.device)
    wd = _work_dtype(g)
    x = g.to(wd)
    if dt_bias is not None:
        _param("dt_bias", dt_bias, {HV}, g.device)
        x = x + dt_bias.to(wd).reshape(HV)
    return (-A_log.to(wd).reshape(HV).exp() * F.softplus(x)).contiguous()


def kda_gate(g, A_log, dt_bias, lower_bound):
    """The per-channel fused gate; g [B, T, HV, K] raw."""
    _check_raw_gate(g)
    if g.dim() != 4:
        raise ValueError(f"g: expected 4 dimensions [B, T, HV, K], got shape {tuple(g.shape)}")
    HV, K = g.shape[-2:]
    if A_log is None and lower_bound is None:
        raise ValueError("A_log: required when use_gate_in_kernel=True and lower_bound is None")
    wd = _work_dtype(g)
    x = g.to(wd)
    if dt_bias is not None:
        _param("dt_bias", dt_bias, {HV * K, HV}, g.device)
        x = x + dt_bias.to(wd).reshape(HV, -1)
    a = None
    if A_log is not None:
        _param("A_log", A_log, {HV}, g.device)
        a = A_log.to(wd).reshape(HV, 1).exp()
    if lower_bound is None:
        return (-a * F.softplus(x)).contiguous()
    lb = _lower_bound(lower_bound)
    return (lb * torch.sigmoid(x if a is None else a * x)).contiguous()


def _lower_bound(lower_bound):
    if isinstance(lower_bound, bool) or not isinstance(lower_bound, (int, float)):
        raise TypeError(f"lower_bound: expected a float, got {type(lower_bound).__name__}")
    if not lower_bound < 0:
        raise ValueError(f"lower_bound: must be negative (a log-space bound), got {lower_bound}")
    return float(lower_bound)


def check_safe_gate(safe_gate, use_gate_in_kernel, lower_bound):
    """fla's rule: a fused safe gate needs lower_bound in [-5, 0)."""
    if safe_gate and use_gate_in_kernel:
        if lower_bound is None:
            raise ValueError("lower_bound: required when safe_gate=True and "
                             "use_gate_in_kernel=True")
        if not -5 <= lower_bound < 0:
            raise ValueError(f"lower_bound: must be in the safe range [-5, 0), got {lower_bound}")
