// File: glr/reference/decayed_gram.hpp
// The two intra-chunk matrices of stage F2 are one operation, the decayed Gram matrix
//   P_ij = Σ_d A_id B_jd exp(G_id − G_jd)   for j ≤ i (inclusive) or j < i (strict), else 0:
// A^qk = P(Q, K, inclusive) (unscaled) and the Gram of L = diag(β) P(K, K, strict).
// How the decay is applied depends on the gate kind, exactly as the kernels will do it:
//   none:    P = A Bᵀ (masked);
//   scalar:  P = (A Bᵀ) ⊙ Γ — the decay factors out of the K-contraction (§4, §5);
//   channel: the decay sits inside the K-contraction (§7), so 16×16 sub-blocks off the diagonal
//            use the row anchor n = first row of the row sub-chunk,
//            (A_i ⊙ exp(G_i − G_n)) · (B_j ⊙ exp(G_n − G_j)), both exponents ≤ 0, and the diagonal
//            sub-blocks use the exact per-pair exponent.
// The VJP returns dA, dB and the gate term dG. dG leaves out the diagonal pairs (i = j): Γ_ii = 1
// does not depend on G, and summing the two O(1) diagonal terms that cancel exactly (q⊙dq_row
// and −k⊙dk_col) would put an O(u) absolute error on dg, which is ruinous under strong decay
// where the true dg is ~e^{-50}. For scalar gates dG is §6's "row sum minus column sum" of
// dP ⊙ P; for channel gates it is A ⊙ dA − B ⊙ dB over the off-diagonal pairs (§7 step 5).
#pragma once

#include "glr/oracle/matrix.hpp"
#include "glr/reference/chunk_gate.hpp"
#include "kcv/glr/precision.hpp"

namespace kcv::glr::detail {

enum class Triangle { kInclusive, kStrict };

Matrix decayed_gram(const Matrix& a, const Matrix& b, const ChunkGate& gate, Triangle tri);

struct GramGrads {
  Matrix da;      ///< ∂L/∂A
  Matrix db;      ///< ∂L/∂B
  Matrix d_gate;  ///< ∂L/∂G (rows × gate width), off-diagonal pairs only
};

/// Variance bound of the first-order error that rounding the product's operands puts on each
/// entry of P: Σ_d (ρ_a² + ρ_b²)·(a'_id b'_jd)², where a', b' are the operands the product reads
/// (A, B themselves for no or a scalar gate, whose Γ multiplies afterwards; the anchored or
/// per-pair factors for a per-channel gate) and ρ is the rounding's unit roundoff, 0 for an
/// operand value the rounding leaves unchanged (bf16 inputs).
Matrix decayed_gram_rounding_var(const Matrix& a, const Matrix& b, const ChunkGate& gate,
                                 Triangle tri, OperandRounding rounding);

/// VJP of decayed_gram; `p` is its forward value (used by the scalar-gate dG).
GramGrads decayed_gram_vjp(const Matrix& dp, const Matrix& a, const Matrix& b, const Matrix& p,
                           const ChunkGate& gate, Triangle tri);

}  // namespace kcv::glr::detail
