// File: glr/reference/channel_gram_vjp_variance.hpp
// The declared-rounding variance of the Gram VJP of a per-channel gate (gla), precision-contract.md
// §6, "Per-channel gates". With dP = scale·Tril_incl(dO Δᵀ) (the gate sits inside the Gram, not
// on dP) and Γ_ijd = exp(G_id − G_jd), the VJP of A^qk = P(Q, K) is
//   dq_id = Σ_{j≤i} dP_ij k_jd Γ_ijd,   dk_jd = Σ_{i≥j} dP_ij q_id Γ_ijd,
// formed as decayed_gram.hpp forms P: off the diagonal sub-blocks with the anchor n of row i's
// sub-chunk, dq from the operand k_jd e^{G_nd − G_jd} (one value per (n, j, d)) and dk from the
// operand q_id e^{G_id − G_nd} (one value per (i, d)), the other factor applied after the
// product; on the diagonal sub-blocks from the per-pair operands k_jd Γ_ijd and q_id Γ_ijd. dP is
// rounded once (gram_vjp.a), each operand once where it is read (gram_vjp.b).
// dg_t,d = Σ_{s≥t} (q_sd dq'_sd − k_sd dk'_sd) + …, dq' and dk' without the pairs i = j, takes
// each rounded value through its combined coefficient: dP_ij reaches dg_t only for j < t ≤ i
// (the pairs with t ≤ j cancel exactly between q·dq' and k·dk'), an anchored operand through the
// sum over the rows (or columns) that read it.
#pragma once

#include "glr/oracle/matrix.hpp"
#include "glr/reference/chunk_forward.hpp"
#include "kcv/glr/precision.hpp"

namespace kcv::glr::detail {

struct ChannelGramVjpVariance {
  Matrix dq;  ///< rows × K
  Matrix dk;  ///< rows × K
  Matrix dg;  ///< rows × K: the Gram VJP's share of dg_t,d's variance
};

/// `dp`: scale·Tril_incl(dO Δᵀ) of the chunk (rows × rows, exact in fp64); `r`: gram_vjp's
/// roundings (a: dP, b: the decayed q or k operand). @pre in.gate.kind() == GateKind::kChannel
ChannelGramVjpVariance channel_gram_vjp_variance(const ChunkInputs& in, const Matrix& dp,
                                                 OperandRounding r);

}  // namespace kcv::glr::detail
