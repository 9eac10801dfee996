// File: glr/oracle/token_step.hpp
// One token of the general recurrence for one value head, in the delta form the oracle uses:
//   S' = Diag(a) S_{t−1} (a = exp(g_t) per key row),  c = b ⊙ k,
//   δ = w ⊙ v − S'^T c,  S_t = S' + k δ^T,  o_t = scale S_t^T q.
// Forward and adjoint both call it, so the adjoint differentiates exactly what the forward ran.
#pragma once

#include <cstdint>
#include <vector>

#include "glr/oracle/indexing.hpp"
#include "glr/oracle/matrix.hpp"
#include "kcv/glr/oracle.hpp"

namespace kcv::glr::detail {

/// Pointers to one token's inputs for value head hv (q and k of its GVA head).
struct TokenView {
  const double* q = nullptr;
  const double* k = nullptr;
  const double* v = nullptr;
  const double* g = nullptr;  ///< null for GateKind::kNone
  const double* erase = nullptr;
  const double* write = nullptr;
};

TokenView token_view(const Recurrence& r, const TensorIndex& ix, std::int64_t t, std::int64_t hv);

/// The intermediates of one step that the adjoint needs.
struct StepRecord {
  std::vector<double> decay;      ///< a, length K
  Matrix decayed;                 ///< S' = Diag(a) S_{t−1}
  std::vector<double> erase_key;  ///< c = b ⊙ k
  std::vector<double> delta;      ///< δ, length V
};

/// S_t = S' + k δ^T from S_{t−1}; fills `rec`.
void step(GateKind gate, const Matrix& prev, const TokenView& x, Matrix& next, StepRecord& rec);

/// o = scale · S^T q (length V).
void output(const Matrix& s, const double* q, double scale, double* o);

}  // namespace kcv::glr::detail
