"""FLOP and byte model of the GLR chunk ops, for the achieved TFLOP/s and HBM bandwidth that
bench/glr/bench.py prints beside each time (docs/glr/bench.md, "FLOP and byte model").

FLOPs: the matrix products of the chunked algorithm with chunk size C = 64, as the chunked
algorithm does them, per value head and per chunk of c tokens (c = C except a sequence's last
chunk, which holds its remainder), K the key and V the value head dim. A product of an (m x n)
and an (n x p) matrix counts 2·m·n·p FLOPs; masked (causal) products count in full, as tensor
cores compute them; elementwise work (gates, exponentials, β scaling) counts nothing.

  linear family (LA, SSD/simple GLA, GLA)
    forward   Q·Kᵀ, P·V, Q·S, Kᵀ·V                                  2c²K + 2c²V + 4cKV
    backward  Kᵀ·V (states recomputed), Qᵀ·dO (the dS scan), K·Qᵀ, Pᵀ·dO, K·dS, dO·Vᵀ,
              dO·Sᵀ, dP·K, V·dSᵀ, dPᵀ·Q                             6c²K + 4c²V + 10cKV
  delta-rule family (DeltaNet, GDN, KDA; WY representation, T = (I + A)⁻¹)
    forward   A = (βK)·Kᵀ, T (a triangular inverse, c³/3), W = T·(βK), U = T·(βV),
              W·S, Kᵀ·V_new (the state pass), Q·Kᵀ, Q·S, P·V_new     6c²K + 4c²V + 6cKV + c³/3
    backward  W, U, W·S, Kᵀ·V_new recomputed; K·Qᵀ, Pᵀ·dO; K·dS, Qᵀ·dO, Wᵀ·dV_new (the dS
              scan); dO·Sᵀ, dO·V_newᵀ, dP·K, dPᵀ·Q, V_new·dSᵀ, dV_new·Sᵀ; dW·(βK)ᵀ, dU·(βV)ᵀ,
              Tᵀ·dW, Tᵀ·dU, Tᵀ·dT·Tᵀ (two c x c x c), dA·K, dAᵀ·(βK)
                                                                    16c²K + 10c²V + 16cKV + 4c³

Per chunk at c = 64, K = V = 128: linear 6.29 MFLOP forward, 15.73 backward; delta rule 11.62
forward, 31.46 backward. forward+backward = forward + backward (the backward recomputes the
states; nothing but the inputs is saved).

Bytes: the minimum HBM traffic, at the tensors' dtypes: the forward reads q, k, v, g, β, h0 and
writes o and the final state; the backward reads q, k, v, g, β, h0, dO and dht and writes dq, dk,
dv, dg, dβ and dh0 (each gradient the size and dtype of its input). No intermediate is counted:
an implementation that saves or spills more moves more. forward+backward = forward + backward.

Ceilings: NVIDIA's datasheet of the GPU the run is on (ceilings_of): H200 SXM dense BF16 tensor
core 989 TFLOP/s (1,979 with sparsity), HBM3e 4.8 TB/s; H100 SXM 989 TFLOP/s, HBM3 3.35 TB/s;
H100 PCIe 756 TFLOP/s, HBM2e 2.0 TB/s; the H200's for any other GPU and on the CPU path. What one H200 reaches on a plain workload is lower (an 8192³ bf16 torch
matmul on random data about 790 TFLOP/s, a device-to-device copy about 4.3 TB/s counting bytes
read and written, the ceilings of the project's speed notes): fractions of those are 1.25x and
1.12x the printed ones. The fp32 grade's CUDA-core kernels are measured against the bf16 tensor
core ceiling too (the work is the same; the FP32 CUDA-core peak is 67 TFLOP/s).
"""

from __future__ import annotations

import math

class Ceilings:
    """A GPU's datasheet ceilings: dense BF16 tensor-core TFLOP/s and HBM TB/s."""

    def __init__(self, name, bf16_dense_tflops, hbm_tbps, memory):
        self.name, self.bf16_dense_tflops = name, bf16_dense_tflops
        self.hbm_tbps, self.memory = hbm_tbps, memory


#: NVIDIA's datasheets: H200 SXM (HBM3e 4.8 TB/s), H100 SXM (HBM3 3.35 TB/s), H100 PCIe (HBM2e
#: 2.0 TB/s); dense BF16 989, 989 and 756 TFLOP/s (half the sparsity figures).
H200 = Ceilings("H200", 989.0, 4.8, "HBM3e")
H100_SXM = Ceilings("H100 SXM", 989.0, 3.35, "HBM3")
H100_PCIE = Ceilings("H100 PCIe", 756.0, 2.0, "HBM2e")
H200_BF16_DENSE_TFLOPS = H200.bf16_dense_tflops
H200_HBM_TBPS = H200.hbm_tbps


def ceilings_of(device_name):
    """The ceilings of the GPU torch names (torch.cuda.get_device_name()); the H200's for any
    other name (the CPU path, a GPU this table does not know), which the report names."""
    name = device_name or ""
    if "H100" in name:
        return H100_PCIE if "PCIe" in name else H100_SXM
    return H200

#: The chunk size the model counts with (kcv's CUDA kernels, fla's and FlashQLA's default).
CHUNK = 64

LINEAR = ("la", "ssd", "gla")
DELTA = ("deltanet", "gdn", "kda")
MEMBERS = ("gdn", "kda", "gla", "ssd", "la", "deltanet")
#: Members whose gate is one log-decay per token and head ([B, T, HV]) or per channel
#: ([B, T, HV, K]); the others have none.
SCALAR_GATE = ("gdn", "ssd")
CHANNEL_GATE = ("kda", "gla")
#: Members with β ([B, T, HV]).
BETA = ("gdn", "kda", "deltanet")


def products(member, pass_, c, K, V):
    """The matrix products of one chunk of c tokens of one value head: [(name, m, n, p)], each
    2·m·n·p FLOPs. pass_: "fwd" or "bwd"."""
    if member in LINEAR:
        if pass_ == "fwd":
            return [("Q·Kᵀ", c, K, c), ("P·V", c, c, V), ("Q·S", c, K, V), ("Kᵀ·V", K, c, V)]
        return [("Kᵀ·V (states recomputed)", K, c, V), ("Qᵀ·dO", K, c, V), ("K·Qᵀ", c, K, c),
                ("Pᵀ·dO", c, c, V), ("K·dS", c, K, V), ("dO·Vᵀ", c, V, c), ("dO·Sᵀ", c, V, K),
                ("dP·K", c, c, K), ("V·dSᵀ", c, V, K), ("dPᵀ·Q", c, c, K)]
    if member in DELTA:
        if pass_ == "fwd":
            return [("A = (βK)·Kᵀ", c, K, c), ("W = T·(βK)", c, c, K), ("U = T·(βV)", c, c, V),
                    ("W·S", c, K, V), ("Kᵀ·V_new", K, c, V), ("Q·Kᵀ", c, K, c),
                    ("Q·S", c, K, V), ("P·V_new", c, c, V)]
        return [("W = T·(βK) (recomputed)", c, c, K), ("U = T·(βV) (recomputed)", c, c, V),
                ("W·S (recomputed)", c, K, V), ("Kᵀ·V_new (recomputed)", K, c, V),
                ("K·Qᵀ", c, K, c), ("Pᵀ·dO", c, c, V),
                ("K·dS", c, K, V), ("Qᵀ·dO", K, c, V), ("Wᵀ·dV_new", K, c, V),
                ("dO·Sᵀ", c, V, K), ("dO·V_newᵀ", c, V, c), ("dP·K", c, c, K),
                ("dPᵀ·Q", c, c, K), ("V_new·dSᵀ", c, V, K), ("dV_new·Sᵀ", c, V, K),
                ("dW·(βK)ᵀ", c, K, c), ("dU·(βV)ᵀ", c, V, c), ("Tᵀ·dW", c, c, K),
                ("Tᵀ·dU", c, c, V), ("Tᵀ·dT", c, c, c), ("(Tᵀ·dT)·Tᵀ", c, c, c),
                ("dA·K", c, c, K), ("dAᵀ·(βK)", c, c, K)]
    raise ValueError(f"member: expected one of {', '.join(MEMBERS)}, got {member!r}")


def chunk_flops(member, pass_, c, K, V):
    """FLOPs of one chunk of c tokens of one value head; pass_ "fwd", "bwd" or "fwd+bwd"."""
    if pass_ == "fwd+bwd":
        return chunk_flops(member, "fwd", c, K, V) + chunk_flops(member, "bwd", c, K, V)
    total = float(sum(2 * m * n * p for _, m, n, p in products(member, pass_, c, K, V)))
    if member in DELTA and pass_ == "fwd":
        total += c ** 3 / 3  # T = (I + A)⁻¹ of a unit lower-triangular c x c matrix
    return total


def chunk_lengths(lengths, chunk=CHUNK):
    """The chunks' lengths of sequences of the given lengths: full chunks, then each sequence's
    remainder."""
    out = []
    for n in lengths:
        out += [chunk] * (n // chunk) + ([n % chunk] if n % chunk else [])
    return out


def flops(member, lengths, heads, K, V, pass_, chunk=CHUNK):
    """Model FLOPs of one call over sequences of the given lengths (B equal lengths for a dense
    batch, the varlen lengths otherwise) and `heads` value heads."""
    return heads * sum(chunk_flops(member, pass_, c, K, V)
                       for c in chunk_lengths(lengths, chunk))


def tensor_bytes(member, tokens, seqs, H, K, V, HV=None, io=2, gate=4, beta=2, state=4):
    """{name: bytes} of the op's inputs (q, k, v, g, beta, h0) and forward outputs (o, ht) for
    `tokens` tokens (B·T) in `seqs` sequences; io: q/k/v/o/dO element size, gate: g's, beta: β's,
    state: h0's, ht's and dht's."""
    HV = H if HV is None else HV
    out = {"q": tokens * H * K * io, "k": tokens * H * K * io, "v": tokens * HV * V * io}
    if member in SCALAR_GATE:
        out["g"] = tokens * HV * gate
    elif member in CHANNEL_GATE:
        out["g"] = tokens * HV * K * gate
    if member in BETA:
        out["beta"] = tokens * HV * beta
    out["h0"] = seqs * HV * K * V * state
    out["o"] = tokens * HV * V * io
    out["ht"] = seqs * HV * K * V * state
    return out


def hbm_bytes(member, tokens, seqs, H, K, V, pass_, HV=None, **sizes):
    """Minimum HBM bytes of one call (see the module docstring); pass_ "fwd", "bwd" or
    "fwd+bwd"."""
    t = tensor_bytes(member, tokens, seqs, H, K, V, HV, **sizes)
    inputs = sum(v for n, v in t.items() if n not in ("o", "ht"))
    fwd = inputs + t["o"] + t["ht"]
    bwd = inputs + t["o"] + t["ht"] + inputs  # read inputs, dO, dht; write the gradients
    return {"fwd": fwd, "bwd": bwd, "fwd+bwd": fwd + bwd}[pass_]


def achieved(flop, nbytes, ms, ceil=H200):
    """(TFLOP/s, GB/s, fraction of the bf16 tensor-core ceiling, fraction of HBM bandwidth) of
    `flop` FLOPs and `nbytes` bytes in `ms` milliseconds against `ceil`; NaNs when ms is not a
    positive time."""
    if not (ms > 0) or math.isinf(ms):
        nan = float("nan")
        return nan, nan, nan, nan
    tflops = flop / (ms * 1e-3) / 1e12
    gbps = nbytes / (ms * 1e-3) / 1e9
    return tflops, gbps, tflops / ceil.bf16_dense_tflops, gbps / (ceil.hbm_tbps * 1e3)
