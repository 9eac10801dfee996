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
  Matrix dq;  ///< rows × K: the A side
  Matrix dk;  ///< rows × K: the B side
  Matrix dg;  ///< rows × K: the Gram VJP's share of dg_t,d's variance
};

/// The VJP of P(A, B) (A^qk: A = Q, B = K; the Gram of L: A = B = K, dP = β ⊙ dL strictly lower)
/// for dP (rows × rows, lower; its upper part 0) with `dp_var` the variance of the error dP
/// already carries (nullptr: none); `r`: gram_vjp's roundings (a: dP, b: the decayed operand).
/// dq is the A side's variance (rows × K), dk the B side's. @pre g.kind() == GateKind::kChannel
ChannelGramVjpVariance channel_gram_vjp_variance(const Matrix& a, const Matrix& b,
                                                 const ChunkGate& g, const Matrix& dp,
                                                 const Matrix* dp_var, OperandRounding r);

}  // namespace kcv::glr::detail
