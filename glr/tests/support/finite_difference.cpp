// File: glr/tests/support/finite_difference.cpp
// The finite-difference comparison of finite_difference.hpp and the loss evaluations it calls.
#include "support/finite_difference.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "glr/oracle/adjoint.hpp"

namespace kcv::glr::testing {
namespace {

constexpr double kUnitRoundoff = std::numeric_limits<double>::epsilon() / 2.0;

// Σ a_i b_i by Neumaier's compensated summation; `bound` gets the error bound of the products
// (u Σ|a_i b_i|) and of the sum (2u|S| + 2n u² Σ|a_i b_i|, Higham §4.3).
double compensated_dot(const std::vector<double>& a, const std::vector<double>& b, double& bound) {
  double sum = 0.0, comp = 0.0, abs_sum = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = a[i] * b[i];
    const double t = sum + x;
    comp += std::abs(sum) >= std::abs(x) ? (sum - t) + x : (x - t) + sum;
    sum = t;
    abs_sum += std::abs(x);
  }
  const double n = static_cast<double>(a.size());
  const double result = sum + comp;
  bound += kUnitRoundoff * abs_sum + 2.0 * kUnitRoundoff * std::abs(result) +
           2.0 * n * kUnitRoundoff * kUnitRoundoff * abs_sum;
  return result;
}

}  // namespace

LossValue recurrence_loss(const Recurrence& r, const Cotangents& cot) {
  Expected<Outputs> out = run_recurrence(r);
  Expected<detail::Adjoint> adj = detail::recurrence_adjoint(r, cot, true);
  if (!out || !adj) throw std::runtime_error("recurrence_loss: invalid problem");
  LossValue loss;
  loss.rounding_bound = adj->loss_rounding_bound;
  loss.value = compensated_dot(out->o, cot.d_o, loss.rounding_bound);
  if (!cot.d_final_state.empty())
    loss.value += compensated_dot(out->final_state, cot.d_final_state, loss.rounding_bound);
  loss.rounding_bound +=
      2.0 * kUnitRoundoff * std::abs(loss.value);  // the final addition, generously
  return loss;
}

LossValue member_loss(Member member, const Problem& p, const Cotangents& cot) {
  Expected<Recurrence> r = as_recurrence(member, p);
  if (!r) throw std::runtime_error("member_loss: " + r.error().to_string());
  return recurrence_loss(*r, cot);
}

FdReport check_gradient(std::vector<double>& x, const std::vector<double>& analytic,
                        Dependence dependence, const LossFn& loss, double gradient_error) {
  const double h = kFdStep;
  const double sinhc_excess = std::sinh(h) / h - 1.0;
  FdReport rep;
  rep.count = x.size();
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i];
    if (x0 + h - h != x0 || x0 - h + h != x0) throw std::logic_error("x ± h is not exact");
    x[i] = x0 + h;
    const LossValue up = loss();
    x[i] = x0 - h;
    const LossValue down = loss();
    x[i] = x0;
    const double fd = (up.value - down.value) / (2.0 * h);
    const double truncation =
        dependence == Dependence::kExpAffine ? std::abs(analytic[i]) * sinhc_excess : 0.0;
    const double bound =
        truncation + (up.rounding_bound + down.rounding_bound) / (2.0 * h) + gradient_error;
    const double ratio = std::abs(fd - analytic[i]) / bound;
    if (ratio >= rep.worst_ratio) rep = {ratio, i, fd, analytic[i], bound, x.size()};
  }
  return rep;
}

}  // namespace kcv::glr::testing
