// File: glr/tests/support/finite_difference.hpp
// Central finite differences of L = ⟨o, dO⟩ + ⟨S_final, dS_final⟩ with a derived error bound per
// component, used to check the oracle's analytic backward.
//
// Step: h = 2^-17, the power of two nearest u^{1/3} = 2^{-53/3} (the classical choice that
// balances an O(h²) truncation error against an O(u/h) rounding error). Test inputs are
// quantised so that x ± h is exact: the difference is exactly symmetric and 2h is exact.
//
// Truncation: along any single input coordinate the loss is either
//   (a) a polynomial of degree ≤ 2 — q, v, β, b, w and h0 enter S_t affinely, k_t enters S_t
//       through k (b⊙k)^T and k (w⊙v)^T, i.e. quadratically, and L is linear in every S_t and o_t;
//       a central difference is exact for a quadratic, so the truncation error is 0; or
//   (b) α + γ·exp(x) — a log-decay g_{t,d} enters only through exp(g_{t,d}), which multiplies
//       (a row of) S_{t−1}, and L is linear in that product; then
//       (L(x+h) − L(x−h)) / 2h = L'(x) · sinh(h)/h, so the truncation error is
//       |L'(x)| · (sinh(h)/h − 1) exactly (≈ |L'| h²/6 ≈ 4.8e-12 |L'|).
// Rounding: |fl(L(x±h)) − L(x±h)| ≤ ΔL(x±h), the first-order bound of glr/oracle/adjoint.hpp plus
// the products and the compensated (Neumaier) sum of the loss; it enters as (ΔL₊ + ΔL₋) / 2h.
// The analytic gradient's own rounding error is added by the caller (`gradient_error`).
// A component fails when |FD − analytic| exceeds the sum of the three terms.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "kcv/glr/oracle.hpp"

namespace kcv::glr::testing {

inline constexpr double kFdStep = 0x1p-17;

/// L and a bound on the rounding error of its fp64 evaluation.
struct LossValue {
  double value = 0.0;
  double rounding_bound = 0.0;
};
using LossFn = std::function<LossValue()>;

/// How L depends on one coordinate of the input being checked (see the file comment).
enum class Dependence { kQuadratic, kExpAffine };

struct FdReport {
  double worst_ratio = 0.0;  ///< max_i |FD_i − analytic_i| / bound_i; the check passes iff ≤ 1
  std::size_t worst_index = 0;
  double fd = 0.0, analytic = 0.0, bound = 0.0;  ///< at worst_index
  std::size_t count = 0;
};

/// Perturbs each x[i] by ±kFdStep (restoring it afterwards), calls `loss` at both points and
/// compares with analytic[i]. @pre x ± kFdStep is exact for every component.
FdReport check_gradient(std::vector<double>& x, const std::vector<double>& analytic,
                        Dependence dependence, const LossFn& loss, double gradient_error);

/// The loss of a general recurrence with its rounding bound (oracle forward + adjoint bound).
LossValue recurrence_loss(const Recurrence& r, const Cotangents& cot);

/// The loss of a member problem (through as_recurrence).
LossValue member_loss(Member member, const Problem& p, const Cotangents& cot);

}  // namespace kcv::glr::testing
