// File: tests/unit/oracle/conforming_test.cpp
// The conforming side of the three-state calibration (research §2.2): fp32 implementations that
// differ from the declared simulation in legitimate ways (summation order, pairwise trees,
// one-pass and Welford variance, online softmax, FMA, reciprocal multiply) must lie within tau
// on every element. Each candidate is plain fp32 C++ (this project builds with -std=c++20, so no
// FMA contraction; fmaf is explicit).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "oracle_test_util.hpp"

namespace kcv {
namespace {

using testing::contract_for;
using Row = std::vector<float>;
using RowFn = std::function<Row(const Row&)>;

float pairwise(const float* x, std::size_t n) {
  if (n == 1) return x[0];
  return pairwise(x, n / 2) + pairwise(x + n / 2, n - n / 2);
}

Row sum_reversed(const Row& x) {
  float s = 0;
  for (std::size_t i = x.size(); i-- > 0;) s += x[i];
  return {s};
}
Row sum_pairwise(const Row& x) { return {pairwise(x.data(), x.size())}; }
Row mean_reciprocal(const Row& x) { return {pairwise(x.data(), x.size()) * (1.0f / static_cast<float>(x.size()))}; }

Row layernorm_one_pass(const Row& x) {
  float s = 0, q = 0;
  for (float v : x) {
    s += v;
    q = std::fmaf(v, v, q);
  }
  const float n = static_cast<float>(x.size());
  const float mean = s / n;
  const float rstd = 1.0f / std::sqrt(q / n - mean * mean + 1e-5f);
  Row y;
  for (float v : x) y.push_back((v - mean) * rstd);
  return y;
}

Row layernorm_welford(const Row& x) {
  float mean = 0, m2 = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float d = x[i] - mean;
    mean += d / static_cast<float>(i + 1);
    m2 += d * (x[i] - mean);
  }
  const float rstd = 1.0f / std::sqrt(m2 / static_cast<float>(x.size()) + 1e-5f);
  Row y;
  for (float v : x) y.push_back((v - mean) * rstd);
  return y;
}

Row softmax_online(const Row& x) {
  float m = -INFINITY, s = 0;
  for (float v : x) {
    const float m_new = std::max(m, v);
    s = s * std::exp(m - m_new) + std::exp(v - m_new);
    m = m_new;
  }
  const float r = 1.0f / s;
  Row y;
  for (float v : x) y.push_back(std::exp(v - m) * r);
  return y;
}

Row log_softmax_log_of_sum(const Row& x) {
  float m = -INFINITY;
  for (float v : x) m = std::max(m, v);
  float s = 0;
  for (float v : x) s += std::exp(v - m);
  const float l = std::log(s);
  Row y;
  for (float v : x) y.push_back(v - m - l);
  return y;
}

Row rmsnorm_pairwise(const Row& x) {
  Row sq;
  for (float v : x) sq.push_back(v * v);
  const float r = 1.0f / std::sqrt(pairwise(sq.data(), sq.size()) / static_cast<float>(x.size()) + 1e-6f);
  Row y;
  for (float v : x) y.push_back(v * r);
  return y;
}

std::vector<double> row_values(int dist, std::size_t n, uint64_t seed) {
  CounterRng rng(seed, 0);
  std::vector<double> v(n);
  for (std::size_t k = 0; k < n; ++k) {
    if (dist == 0) v[k] = rng.normal(k);
    if (dist == 1) v[k] = rng.uniform(k);
    if (dist == 2) v[k] = 3 + rng.normal(k);
    if (dist == 3) v[k] = std::ldexp(rng.normal(k), static_cast<int>(rng.uniform(k, 1) * 16) - 8);
  }
  return v;
}

/// Worst ratio |candidate - value| / tau of `fn` applied row by row to x[M, N].
double worst_ratio(const std::string& op, const RowFn& fn, ProfileId p, int dist) {
  constexpr int64_t kM = 8, kN = 1000;
  const HostTensor x = make_tensor(DType::kF32, {kM, kN}, row_values(dist, kM * kN, 17));
  std::vector<HostTensor> in = {x};
  const auto& sig = find_op(op)->signature();
  if (sig.inputs.size() > 1) in.push_back(make_tensor(DType::kF32, {kN}, std::vector<double>(kN, 1)));
  if (sig.inputs.size() > 2) in.push_back(make_tensor(DType::kF32, {kN}, std::vector<double>(kN, 0)));
  const auto out = find_op(op)->evaluate(in, contract_for(op, p)).outputs.at(0);
  const std::size_t per_row = out.value.size() / kM;
  double worst = 0;
  for (int64_t r = 0; r < kM; ++r) {
    Row row;
    for (int64_t k = 0; k < kN; ++k) row.push_back(static_cast<float>(x.value_at(r * kN + k)));
    const Row y = fn(row);
    for (std::size_t k = 0; k < per_row; ++k) {
      const std::size_t i = static_cast<std::size_t>(r) * per_row + k;
      worst = std::max(worst, std::fabs(y[k] - out.value[i]) / out.tau[i]);
    }
  }
  return worst;
}

TEST(OracleConforming, LegitimateFp32VariantsPassTheirBounds) {
  const std::vector<std::pair<std::string, RowFn>> cases = {
      {"sum", sum_reversed},         {"sum", sum_pairwise},
      {"mean", mean_reciprocal},     {"layernorm", layernorm_one_pass},
      {"layernorm", layernorm_welford}, {"softmax", softmax_online},
      {"log_softmax", log_softmax_log_of_sum}, {"rmsnorm", rmsnorm_pairwise}};
  for (const auto& [op, fn] : cases) {
    for (ProfileId p : {ProfileId::kStrict, ProfileId::kCudaDefault}) {
      for (int dist = 0; dist < 4; ++dist) {
        const double w = worst_ratio(op, fn, p, dist);
        EXPECT_LE(w, 1.0) << op << " " << profile(p).name << " dist " << dist;
      }
    }
  }
}

}  // namespace
}  // namespace kcv
