// File: glr/reference/tril_inverse.hpp
// T = (I + L)^{-1} for a strictly lower-triangular L (the "UT transform" of the delta rule), the
// way gdn-spec.md §8 computes it: split into kSubChunk×kSubChunk blocks (the last one partial on a
// ragged tail chunk); invert each diagonal block by row-wise forward substitution
//   N = −L_rr;  for i ≥ 2: a = −L_rr[i, :i];  N[i, :] = a + a·N[:i, :];  T_rr = I + N
// then fill the off-diagonal blocks by block forward substitution
//   T_rs = −T_rr · Σ_{m=s}^{r−1} L_rm T_ms   (r > s, increasing r).
// Its VJP is dL = −StrictLower(Tᵀ · dT · Tᵀ); the outer StrictLower is required (§8).
#pragma once

#include "glr/oracle/matrix.hpp"

namespace kcv::glr::detail {

/// @pre l is square and strictly lower triangular. @post (I + l)·T = I up to rounding.
Matrix unit_lower_inverse(const Matrix& l);

/// Given T = unit_lower_inverse(L) and dT = ∂Loss/∂T, returns ∂Loss/∂L (strictly lower).
Matrix unit_lower_inverse_vjp(const Matrix& t, const Matrix& dt);

}  // namespace kcv::glr::detail
