"""kcv's gate judges for gates_vs_fla.py: the C++ judges of src/gates through kcv._core.judge, on
CallRecords holding one implementation's outputs (ours, fla's, FlashQLA's). There is no other
judge: kcv._core must import (the report names the judge it used).

Outputs travel as kcv's bindings want them: bf16 as uint16 bit patterns, fp32 as float32; the
oracle entries carry the fp64 value and tau (error_model.py, the C++ GLR error model) of every
element.
"""

import torch

from kcv import _core

DTYPES = {torch.bfloat16: "bf16", torch.float32: "f32", torch.float64: "f64",
          torch.float16: "f16"}


def judge_name():
    return "kcv._core.judge (C++ gate judges)"


def to_array(t):
    """A torch tensor as the numpy array kcv's bindings take (bf16 -> uint16 bits)."""
    import numpy as np
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16).copy()
    return t.numpy().copy()


def oracle_entry(dtype, ref, tau):
    """dtype: "bf16" | "f32"; ref, tau: float64 tensors of the output's shape."""
    return {"dtype": dtype, "shape": tuple(ref.shape), "value": ref.double().cpu().numpy(),
            "tau": tau.double().cpu().numpy(), "declared": None}


def judge(gate, calls, oracle, inputs, label=""):
    """calls: a list (one per call) of lists of output arrays (to_array), in oracle order;
    oracle: oracle_entry dicts; inputs: [(name, array)] of the kernel's inputs. Returns the
    C++ judge's dict (verdict, summary, worst_ratio, output, worst_index, violations, ...)."""
    records = [_core.CallRecord(status="ok", outputs=list(c)) for c in calls]
    return _core.judge(gate, calls=records, oracle=oracle, inputs=inputs,
                       contract_json='{"deterministic": true}', op_class="scan", label=label,
                       repetitions=len(calls), op_name="glr")
