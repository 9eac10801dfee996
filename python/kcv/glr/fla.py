"""kcv as an fla 0.6 backend: `import kcv.glr.fla` and a model built from fla's layers runs its
linear-attention ops on kcv's kernels (CUDA) or kcv's fp64 reference (CPU), with no other change.

fla 0.6 selects an op's implementation through fla.backends: a registry holds backends ordered by
priority, each with an `<op>_verifier` that may decline a call (fla then tries the next backend and
finally its own Triton kernels). fla exposes such a registry for chunk_gated_delta_rule (the
'gated_delta_rule' operation), chunk_kda and fused_recurrent_simple_gla; kcv registers its backend
there. The other ops kcv implements have no dispatch point in fla 0.6, so this module adds one with
fla's own `fla.backends.dispatch` and rebinds the op's name, in every loaded fla module, to the
dispatching wrapper (fla's layers import the ops by name). The wrapper keeps fla's behaviour when
kcv declines.

The verifier declines (fla's kernels run instead) what kcv does not implement: cp_context,
return_intermediate_states, use_graph, gv, reverse, g and gk together, the CUDA chunk kernels'
limits (bfloat16 q/k/v, K, V ≤ 128) and the decode kernel's (K, V ≤ 256), CUDA tensors when
kcv._glr was built without CUDA, and devices other than cpu and cuda. Set FLA_KCV=0 to turn the
backend off; FLA_DISABLE_BACKEND_DISPATCH=1 (fla's switch) bypasses every backend.

fla's layers call the ops without kcv's `precision` keyword, so their chunk ops run at the
process-wide grade: kcv.glr.set_precision("bf16") puts them on the tensor-core kernels where those
take the call (docs/glr/fla-api.md, "Precision grade"); the default is "fp32".
"""

from __future__ import annotations

import importlib
import inspect
import sys

import torch
from fla.backends import BaseBackend, dispatch, register

import kcv.glr as glr
from kcv.glr._native import MAX_CPU_HEAD_DIM, MAX_DECODE_HEAD_DIM, MAX_HEAD_DIM, has_cuda

#: (fla module, op name, kcv op). The first group has a dispatch point in fla 0.6.
OPS = [
    ("fla.ops.gated_delta_rule.chunk", "chunk_gated_delta_rule", glr.chunk_gated_delta_rule),
    ("fla.ops.kda.chunk", "chunk_kda", glr.chunk_kda),
    ("fla.ops.simple_gla.fused_recurrent", "fused_recurrent_simple_gla",
     glr.fused_recurrent_simple_gla),
    ("fla.ops.gated_delta_rule.fused_recurrent", "fused_recurrent_gated_delta_rule",
     glr.fused_recurrent_gated_delta_rule),
    ("fla.ops.kda.fused_recurrent", "fused_recurrent_kda", glr.fused_recurrent_kda),
    ("fla.ops.delta_rule.chunk", "chunk_delta_rule", glr.chunk_delta_rule),
    ("fla.ops.delta_rule.fused_recurrent", "fused_recurrent_delta_rule",
     glr.fused_recurrent_delta_rule),
    ("fla.ops.gla.chunk", "chunk_gla", glr.chunk_gla),
    ("fla.ops.gla.fused_recurrent", "fused_recurrent_gla", glr.fused_recurrent_gla),
    ("fla.ops.simple_gla.chunk", "chunk_simple_gla", glr.chunk_simple_gla),
    ("fla.ops.linear_attn.chunk", "chunk_linear_attn", glr.chunk_linear_attn),
    ("fla.ops.linear_attn.fused_recurrent", "fused_recurrent_linear_attn",
     glr.fused_recurrent_linear_attn),
]

#: fla's operation registry that dispatches chunk_gated_delta_rule.
_OPERATION = {"chunk_gated_delta_rule": "gated_delta_rule"}

_REFUSED = (("cp_context", None), ("return_intermediate_states", False), ("use_graph", False),
            ("gv", None), ("reverse", False))


def _needs_grad(tensors):
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


def decline_reason(name, arguments):
    """Why kcv declines this call of fla op `name` (None: kcv takes it). `arguments` maps every
    argument name, **kwargs included, to its value."""
    for key, default in _REFUSED:
        value = arguments.get(key, default)
        if value is not None and value is not default and value != default:
            return f"kcv does not implement {key}"
    if arguments.get("g") is not None and arguments.get("gk") is not None:
        return "kcv runs one gate per call (g and gk given)"
    q, v = arguments.get("q"), arguments.get("v")
    if not isinstance(q, torch.Tensor) or not isinstance(v, torch.Tensor) or q.dim() != 4 \
            or v.dim() != 4:
        return "q and v must be 4-D tensors"
    K, V = q.shape[-1], v.shape[-1]
    if q.device.type == "cpu":
        limit = MAX_CPU_HEAD_DIM
    elif q.device.type != "cuda":
        return f"kcv runs on cpu and cuda, not {q.device.type}"
    elif not has_cuda():
        return "kcv._glr was built without the CUDA kernels"
    elif name.startswith("fused_recurrent") and not _needs_grad(
            [t for t in arguments.values() if isinstance(t, torch.Tensor)]):
        limit = MAX_DECODE_HEAD_DIM
    else:
        if q.dtype != torch.bfloat16:
            return f"kcv's CUDA chunk kernels take bfloat16 q/k/v, got {q.dtype}"
        limit = MAX_HEAD_DIM
    if K > limit or V > limit:
        return f"kcv takes K, V <= {limit} here, got K={K}, V={V}"
    return None


def _verifier(name, op):
    signature = inspect.signature(op)

    def verify(self, *args, **kwargs):
        del self
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as error:
            return False, f"kcv: {error}"
        arguments = dict(bound.arguments)
        arguments.update(arguments.pop("kwargs", {}))
        reason = decline_reason(name, arguments)
        return reason is None, reason

    return verify


def _implementation(op):
    def implementation(self, *args, **kwargs):
        del self
        return op(*args, **kwargs)

    return implementation


class KcvBackend(BaseBackend):
    """kcv's GLR ops as an fla backend (priority 1: ahead of fla's own and FlashQLA's)."""

    backend_type = "kcv"
    package_name = None
    env_var = "FLA_KCV"
    default_enable = True
    priority = 1


for _module, _name, _op in OPS:
    setattr(KcvBackend, _name, _implementation(_op))
    setattr(KcvBackend, f"{_name}_verifier", _verifier(_name, _op))


def _rebind(original, replacement):
    """Points every loaded fla module's name for `original` at `replacement`."""
    for module_name, module in list(sys.modules.items()):
        if module is None or not (module_name == "fla" or module_name.startswith("fla.")):
            continue
        for attr, value in list(vars(module).items()):
            if value is original:
                setattr(module, attr, replacement)


def _install():
    for module_name, name, _ in OPS:
        module = importlib.import_module(module_name)
        fn = getattr(module, name)
        if name in _OPERATION:
            register(_OPERATION[name])(KcvBackend)
            continue
        try:
            register(fn)(KcvBackend)
        except KeyError:  # no dispatch point in fla: add one, then register
            wrapped = dispatch(fn)
            register(fn)(KcvBackend)
            _rebind(fn, wrapped)


_install()
