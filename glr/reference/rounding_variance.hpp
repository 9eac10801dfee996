// File: glr/reference/rounding_variance.hpp
// The declared-rounding term of the GLR bound, one chunk at a time (docs/glr/precision-contract.md
// §3). A declared rounding of operand X of a product is a relative perturbation X ⊙ ε with
// |ε| ≤ u; to first order it reaches the outputs through the exact linear maps of the chunk
// algebra, evaluated at the reference's own intermediates. Errors are modelled as independent
// and zero-mean (kcv's probabilistic model), so each chunk carries an elementwise variance bound:
// of its outputs o and of the state it hands on. Two rules keep the model from losing the
// cancellations the algebra has:
//  * a value's error is propagated through all of its uses together (the state error through
//    M = Diag(e_last) − K̄ᵀW, not through e_last and K̄ᵀW apart; the T error through
//    Ṽ − X H; the rounding of H, used by Q̄ H and W H, through Q̄ − A^qk W), since one rounded
//    value has one error;
//  * uses that round one value to different formats add with the worst sign.
#pragma once

#include "glr/oracle/matrix.hpp"
#include "glr/reference/chunk_forward.hpp"
#include "kcv/glr/precision.hpp"

namespace kcv::glr::detail {

/// Elementwise x².
Matrix squared(const Matrix& x);

/// (ρ ⊙ X)², ρ_ij = u(r) unless the rounding leaves X_ij unchanged and X_ij carries no upstream
/// error (var == nullptr or var_ij == 0), then 0.
Matrix rounding_var(const Matrix& x, Rounding r, const Matrix* var = nullptr);

/// Variance of Σ_d C_id (ε ⊙ Y)_de over two uses C1, C2 of one value Y (rows × K by K × V)
/// rounded to r1 and r2: (C1 + C2)² · R when r1 = r2, else the worst-sign sum.
Matrix shared_rounding_var(const Matrix& c1, Rounding r1, const Matrix& c2, Rounding r2,
                           const Matrix& y, const Matrix* y_var);

/// The variance bounds one chunk adds and hands on.
struct ChunkVariance {
  Matrix o;           ///< of the chunk's outputs (c × V, scaled)
  Matrix next_state;  ///< of the state leaving the chunk (K × V)
};

/// The delta rule's forward variances of one chunk (stages F2, F3 and Δ's local part), for the
/// backward's bound: of T and of W before their own rounding, and of Δ from this chunk's
/// roundings (not through the entering state).
struct DeltaRuleForwardVariance {
  Matrix t, w, delta_local;
};
DeltaRuleForwardVariance delta_rule_forward_variance(const ChunkInputs& in, const ChunkFactors& f,
                                                     const Matrix& h,
                                                     const PrecisionContract& contract);

/// One chunk: the entering state h with variance h_var, Δ and the leaving state `next` of the
/// reference, under `contract`'s forward products and state carry.
ChunkVariance chunk_rounding_variance(const ChunkInputs& in, const ChunkFactors& f, const Matrix& h,
                                      const Matrix& h_var, const Matrix& delta, const Matrix& next,
                                      double scale, bool delta_rule,
                                      const PrecisionContract& contract);

}  // namespace kcv::glr::detail
