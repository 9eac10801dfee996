// File: glr/oracle/adjoint.hpp
// The reverse-time adjoint of the general recurrence, plus a by-product the finite-difference
// tests need: a first-order bound on the fp64 rounding error of evaluating
// L = ⟨o, dO⟩ + ⟨S_final, dS_final⟩ with the token loop. An error ε_t made while forming S_t
// reaches L as ⟨∂L/∂S_t, ε_t⟩ (first order), and ∂L/∂S_t is exactly what the adjoint carries, so
// the bound is Σ_t Σ_{d,e} |∂L/∂S_t|_{de} · E_{t,de} + Σ_t Σ_e |dO_{t,e}| · F_{t,e}, with the
// standard per-step error bounds (γ_n = n·u / (1 − n·u), u = 2^-53)
//   E_{t,de} = γ_{K+4} · (|S'_{de}| + |k_d| · (|w_e v_e| + Σ_d' |S'_{d'e}| |c_d'|))
//   F_{t,e}  = γ_{K+1} · scale · Σ_d |S_{t,de}| |q_d|.
// The public recurrence_backward() does not compute the bound (it doubles the cost of a step).
#pragma once

#include "kcv/expected.hpp"
#include "kcv/glr/oracle.hpp"

namespace kcv::glr::detail {

struct Adjoint {
  RecurrenceGradients grads;
  double loss_rounding_bound = 0.0;  ///< first-order bound on |fl(L) − L| of the forward, see above
};

/// @post loss_rounding_bound is 0 unless `with_rounding_bound`.
[[nodiscard]] Expected<Adjoint> recurrence_adjoint(const Recurrence& r, const Cotangents& cot,
                                                   bool with_rounding_bound);

/// γ_n = n·u / (1 − n·u) with u = 2^-53 (Higham, "Accuracy and Stability", §3.1).
double gamma(double n);

}  // namespace kcv::glr::detail
