// File: glr/tests/channel_gram_vjp_variance_test.cpp
// channel_gram_vjp_variance against a brute-force listing of every rounded value and its
// coefficient. The listing names each rounded value once: dP_ij (with the error it carries), the
// anchored operand of dq (n, j, d) and of dk (i, d), the per-pair operands of the diagonal
// sub-blocks; for each it forms the coefficient with which the value reaches dq_id, dk_jd and
// dg_t,d = Σ_{s≥t} (a_sd dq'_sd − b_sd dk'_sd) directly (an O(C⁴) double loop, no running sums),
// and sums coefficient² × relative variance. The running sums of the implementation must give
// the same numbers to rounding (1e-10 relative), for chunks of 17, 50 and 64 rows (a partial last
// sub-chunk, several, a full chunk), weak and strong decay, with and without a carried dP error.
#include "glr/reference/channel_gram_vjp_variance.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "kcv/glr/chunked.hpp"
#include "support/chunk_data.hpp"

namespace kcv::glr {
namespace {

using detail::ChunkGate;
using detail::Matrix;
using testing::Decay;

double rel(Rounding r, double x) {
  if (r == Rounding::kNone || representable(r, x)) return 0.0;
  return unit_roundoff(r) * unit_roundoff(r);
}

std::int64_t anchor(std::int64_t i) { return i / kSubChunk * kSubChunk; }

struct Brute {
  Matrix dq, dk, dg;
};

// Every rounded value through its coefficients, summed directly.
Brute brute_force(const Matrix& a, const Matrix& b, const ChunkGate& g, const Matrix& dp,
                  const Matrix* dp_var, OperandRounding r) {
  const std::int64_t c = a.rows(), kd = a.cols();
  Brute out{Matrix(c, kd), Matrix(c, kd), Matrix(c, kd)};
  const double ua2 = unit_roundoff(r.a) * unit_roundoff(r.a);
  for (std::int64_t d = 0; d < kd; ++d) {
    const auto y = [&](std::int64_t i, std::int64_t j) {
      return dp(i, j) * a(i, d) * b(j, d) * g.between(i, j, d);
    };
    for (std::int64_t t = 0; t < c; ++t) {
      double v = 0.0;
      // dP_ij: reaches row i's a·dq' (i ≥ t) and row j's b·dk' (j ≥ t), with opposite signs
      for (std::int64_t i = 0; i < c; ++i)
        for (std::int64_t j = 0; j < i; ++j) {
          const double err = dp_var == nullptr ? 0.0 : (*dp_var)(i, j);
          const double p = dp(i, j);
          const double vp = (err > 0.0 ? ua2 * p * p : rel(r.a, p) * p * p) + err;
          const double coef = ((i >= t) - (j >= t)) * a(i, d) * b(j, d) * g.between(i, j, d);
          v += vp * coef * coef;
        }
      // dq's anchored operand (n, j): read by the rows i of n's sub-chunk, j < n
      for (std::int64_t n = 0; n < c; n += kSubChunk)
        for (std::int64_t j = 0; j < n; ++j) {
          double s = 0.0;
          for (std::int64_t i = n; i < std::min(n + kSubChunk, c); ++i)
            if (i >= t) s += y(i, j);
          v += rel(r.b, b(j, d) * g.between(n, j, d)) * s * s;
        }
      // dk's anchored operand (i): read by the columns j < anchor(i)
      for (std::int64_t i = 0; i < c; ++i) {
        double s = 0.0;
        for (std::int64_t j = t; j < anchor(i); ++j) s += y(i, j);
        v += rel(r.b, a(i, d) * g.between(i, anchor(i), d)) * s * s;
      }
      // the per-pair operands of the diagonal sub-blocks (off the diagonal)
      for (std::int64_t i = 0; i < c; ++i)
        for (std::int64_t j = anchor(i); j < i; ++j) {
          const double gm = g.between(i, j, d);
          if (i >= t) v += rel(r.b, b(j, d) * gm) * y(i, j) * y(i, j);
          if (j >= t) v += rel(r.b, a(i, d) * gm) * y(i, j) * y(i, j);
        }
      out.dg(t, d) = v;
    }
    // dq_id, dk_jd: every rounded value reaches one element once
    for (std::int64_t i = 0; i < c; ++i)
      for (std::int64_t j = 0; j <= i; ++j) {
        const double err = dp_var == nullptr ? 0.0 : (*dp_var)(i, j);
        const double p = dp(i, j), gm = g.between(i, j, d);
        const double vp = (err > 0.0 ? ua2 * p * p : rel(r.a, p) * p * p) + err;
        const bool off = j < anchor(i);
        const double rk = rel(r.b, off ? b(j, d) * g.between(anchor(i), j, d) : b(j, d) * gm);
        const double rq = rel(r.b, off ? a(i, d) * g.between(i, anchor(i), d) : a(i, d) * gm);
        out.dq(i, d) += (vp + rk * p * p) * b(j, d) * gm * b(j, d) * gm;
        out.dk(j, d) += (vp + rq * p * p) * a(i, d) * gm * a(i, d) * gm;
      }
  }
  return out;
}

void expect_near_rel(const Matrix& got, const Matrix& want, const std::string& what) {
  for (std::int64_t i = 0; i < got.rows(); ++i)
    for (std::int64_t j = 0; j < got.cols(); ++j)
      ASSERT_LE(std::fabs(got(i, j) - want(i, j)), 1e-10 * std::fabs(want(i, j)) + 1e-300)
          << what << " (" << i << ", " << j << "): " << got(i, j) << " vs " << want(i, j);
}

struct Param {
  std::int64_t rows;
  Decay decay;
  bool carried_error;
};

class ChannelGramVjpVariance : public ::testing::TestWithParam<Param> {};

TEST_P(ChannelGramVjpVariance, EqualsEveryRoundedValueThroughItsCoefficient) {
  const Param& prm = GetParam();
  const std::int64_t c = prm.rows, kd = 5;
  const testing::ChunkData data = testing::make_chunk(c, kd, GateKind::kChannel, prm.decay, 11);
  const ChunkGate gate(GateKind::kChannel, c, data.g);
  Matrix a = data.q, b = data.k;  // bf16 operands: exact, so only the decayed ones are charged
  for (Matrix* m : {&a, &b})
    for (std::int64_t i = 0; i < c; ++i)
      for (std::int64_t d = 0; d < kd; ++d)
        (*m)(i, d) = round_to(Rounding::kBf16, static_cast<float>((*m)(i, d)));
  Matrix dp = testing::random_matrix(c, c, 12), var(c, c);
  for (std::int64_t i = 0; i < c; ++i)
    for (std::int64_t j = 0; j < c; ++j) {
      if (j > i) dp(i, j) = 0.0;
      var(i, j) = j > i ? 0.0 : 1e-6 * std::fabs(dp(i, j));
    }
  const OperandRounding r{Rounding::kBf16, Rounding::kBf16};
  const Matrix* dp_var = prm.carried_error ? &var : nullptr;
  const detail::ChannelGramVjpVariance got =
      detail::channel_gram_vjp_variance(a, b, gate, dp, dp_var, r);
  const Brute want = brute_force(a, b, gate, dp, dp_var, r);
  expect_near_rel(got.dq, want.dq, "dq");
  expect_near_rel(got.dk, want.dk, "dk");
  expect_near_rel(got.dg, want.dg, "dg");
}

INSTANTIATE_TEST_SUITE_P(
    Chunks, ChannelGramVjpVariance,
    ::testing::Values(Param{17, Decay::kWeak, false}, Param{50, Decay::kModerate, true},
                      Param{64, Decay::kModerate, false}, Param{64, Decay::kStrong, true}),
    [](const ::testing::TestParamInfo<Param>& info) {
      const char* decay = info.param.decay == Decay::kWeak
                              ? "weak"
                              : (info.param.decay == Decay::kStrong ? "strong" : "moderate");
      std::string label = "C";  // not "C" + ...: GCC 12 -Wrestrict false positive
      label += std::to_string(info.param.rows);
      label += "_";
      label += decay;
      if (info.param.carried_error) label += "_carried";
      return label;
    });

}  // namespace
}  // namespace kcv::glr
