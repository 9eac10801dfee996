// File: glr/check/decode_emulated_test.cpp
// The decode kernel's body (glr/kernels/decode_kernel.cuh) compiled as host C++ through the
// emulator's CUDA shim and run on the CPU, 32 host threads per CTA (one per lane, __syncwarp as
// their barrier; emulator/emulated_decode.hpp), against the fp64 token-serial oracle: every member,
// GVA, both state layouts, fixed-length batches and varlen, with and without an initial state, K =
// V = 256 included. The GPU runs the same source (decode.cu); this checks its algebra, indexing and
// lane ownership where no GPU is. Exit status 0 when every case is within its bound.
//
// Bound: the kernel sums K products per output in fp32 over T tokens of a contracting recurrence
// (|decay| ≤ 1, β ≤ 1, unit-norm keys), so its error is below c·(T + K)·u32·max|o|, c = 8.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "glr/check/emulator/emulated_decode.hpp"
#include "kcv/glr/member.hpp"
#include "kcv/glr/oracle.hpp"
#include "kcv/glr/problem.hpp"

namespace {

using kcv::glr::Member;
using kcv::glr::gpu::detail::DecodeParams;

struct Case {
  Member member;
  std::vector<std::int64_t> lengths;
  bool varlen;
  std::int64_t qk_heads, v_heads, key_dim, value_dim;
  bool v_first, with_h0;
};

std::vector<float> to_f32(const std::vector<double>& x) { return {x.begin(), x.end()}; }

kcv::glr::Problem make_problem(const Case& c, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  kcv::glr::Problem p;
  auto& s = p.shape;
  for (std::int64_t n : c.lengths) s.tokens += n;
  s.qk_heads = c.qk_heads;
  s.v_heads = c.v_heads;
  s.key_dim = c.key_dim;
  s.value_dim = c.value_dim;
  s.cu_seqlens = {0};
  for (std::int64_t n : c.lengths) s.cu_seqlens.push_back(s.cu_seqlens.back() + n);
  const auto unit_rows = [&](std::int64_t rows, std::int64_t dim) {
    std::vector<double> x(static_cast<std::size_t>(rows * dim));
    for (std::int64_t r = 0; r < rows; ++r) {
      double norm = 0.0;
      for (std::int64_t d = 0; d < dim; ++d) norm += std::pow(x[r * dim + d] = normal(rng), 2);
      for (std::int64_t d = 0; d < dim; ++d) x[r * dim + d] /= std::sqrt(norm);
    }
    return x;
  };
  p.q = unit_rows(s.tokens * s.qk_heads, s.key_dim);
  p.k = unit_rows(s.tokens * s.qk_heads, s.key_dim);
  p.v.resize(static_cast<std::size_t>(s.v_size()));
  for (double& x : p.v) x = normal(rng);
  const kcv::glr::MemberTraits t = kcv::glr::traits(c.member);
  const std::int64_t gw = kcv::glr::gate_width(t.gate, s.key_dim);
  p.g.resize(static_cast<std::size_t>(s.tokens * s.v_heads * gw));
  for (double& x : p.g) x = -0.25 * unit(rng);
  if (t.delta_rule) {
    p.beta.resize(static_cast<std::size_t>(s.tokens * s.v_heads));
    for (double& x : p.beta) x = unit(rng);
  }
  if (c.with_h0) {
    p.h0.resize(static_cast<std::size_t>(s.state_size()));
    for (double& x : p.h0) x = 0.1 * normal(rng);
  }
  p.scale = 1.0 / std::sqrt(static_cast<double>(s.key_dim));
  p.layout = c.v_first ? kcv::glr::StateLayout::kVK : kcv::glr::StateLayout::kKV;
  return p;
}

double max_abs(const std::vector<double>& x) {
  double m = 0.0;
  for (double v : x) m = std::max(m, std::abs(v));
  return m;
}

// Largest |a - b| over max|b|.
double rel_error(const std::vector<float>& a, const std::vector<double>& b) {
  double err = 0.0;
  for (std::size_t i = 0; i < b.size(); ++i) err = std::max(err, std::abs(a[i] - b[i]));
  return err / std::max(max_abs(b), 1e-30);
}

bool check(const Case& c, std::uint32_t seed) {
  const kcv::glr::Problem prob = make_problem(c, seed);
  const auto want = kcv::glr::oracle_forward(c.member, prob);
  if (!want) {
    std::printf("oracle error: %s\n", want.error().to_string().c_str());
    return false;
  }
  const auto q = to_f32(prob.q), k = to_f32(prob.k), v = to_f32(prob.v), g = to_f32(prob.g),
             beta = to_f32(prob.beta);
  std::vector<float> state =
      prob.h0.empty() ? std::vector<float>(static_cast<std::size_t>(prob.shape.state_size()), 0.0f)
                      : to_f32(prob.h0);
  std::vector<float> o(static_cast<std::size_t>(prob.shape.v_size()),
                       std::numeric_limits<float>::quiet_NaN());
  const kcv::glr::MemberTraits t = kcv::glr::traits(c.member);
  DecodeParams p;
  p.q = q.data();
  p.k = k.data();
  p.v = v.data();
  p.g = g.empty() ? nullptr : g.data();
  p.beta = beta.empty() ? nullptr : beta.data();
  const std::int64_t sequences = static_cast<std::int64_t>(c.lengths.size());
  p.cu_seqlens = c.varlen ? prob.shape.cu_seqlens.data() : nullptr;
  p.seq_len = c.lengths.front();  // all equal without varlen
  p.sequences = sequences;
  p.o = o.data();
  p.state = state.data();
  p.qk_heads = static_cast<int>(c.qk_heads);
  p.v_heads = static_cast<int>(c.v_heads);
  p.key_dim = static_cast<int>(c.key_dim);
  p.value_dim = static_cast<int>(c.value_dim);
  p.gate_width = static_cast<int>(kcv::glr::gate_width(t.gate, c.key_dim));
  p.delta_rule = t.delta_rule;
  p.v_first = c.v_first;
  p.scale = static_cast<float>(prob.scale);
  kcv::glr::check::run_decode_emulated(p);
  const std::int64_t longest = *std::max_element(c.lengths.begin(), c.lengths.end());
  const double bound =
      8.0 * static_cast<double>(longest + c.key_dim) * std::numeric_limits<float>::epsilon();
  const double e_o = rel_error(o, want->o);
  const double e_s = rel_error(state, want->final_state);
  const bool ok = e_o <= bound && e_s <= bound;  // false for NaN
  std::printf(
      "%-4s %-8s T=%-3lld HV=%lld K=%-3lld V=%-3lld %s%s o %.2e state %.2e (bound %.2e) %s\n",
      ok ? "ok" : "FAIL", std::string(kcv::glr::name(c.member)).c_str(),
      static_cast<long long>(prob.shape.tokens), static_cast<long long>(c.v_heads),
      static_cast<long long>(c.key_dim), static_cast<long long>(c.value_dim),
      c.varlen ? "varlen " : "", c.v_first ? "vk" : "kv", e_o, e_s, bound, c.with_h0 ? "h0" : "");
  return ok;
}

}  // namespace

int main() {
  int failures = 0;
  std::uint32_t seed = 1;
  for (Member m : kcv::glr::kAllMembers) {
    const Case cases[] = {
        {m, {5, 5}, false, 1, 2, 40, 33, false, true},
        {m, {1, 3, 6}, true, 2, 4, 16, 70, true, false},
        {m, {2}, false, 1, 1, 256, 256, false, true},
    };
    for (const Case& c : cases) failures += check(c, seed++) ? 0 : 1;
  }
  std::printf("%d failure(s)\n", failures);
  return failures == 0 ? 0 : 1;
}
