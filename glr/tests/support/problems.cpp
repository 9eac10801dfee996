// File: glr/tests/support/problems.cpp
// Draws the random problems of problems.hpp with std::mt19937_64 (seeded, deterministic).
#include "support/problems.hpp"

#include <cmath>
#include <numeric>
#include <random>

namespace kcv::glr::testing {
namespace {

constexpr double kQuantum = 0x1p-30;

class Draw {
 public:
  Draw(std::uint64_t seed, bool quantize) : rng_(seed), quantize_(quantize) {}
  double normal() { return q(std::normal_distribution<double>(0.0, 1.0)(rng_)); }
  double uniform() { return q(std::uniform_real_distribution<double>(0.0, 1.0)(rng_)); }
  double q(double x) const { return quantize_ ? std::nearbyint(x / kQuantum) * kQuantum : x; }

  std::vector<double> normals(std::int64_t n, double sd = 1.0) {
    std::vector<double> out(static_cast<std::size_t>(n));
    for (double& x : out) x = q(sd * normal());
    return out;
  }
  // Rows of length `dim` with unit 2-norm.
  std::vector<double> unit_rows(std::int64_t rows, std::int64_t dim) {
    std::vector<double> out(static_cast<std::size_t>(rows * dim));
    for (std::int64_t r = 0; r < rows; ++r) {
      double ss = 0.0;
      for (std::int64_t d = 0; d < dim; ++d) {
        const double x = normal();
        out[r * dim + d] = x;
        ss += x * x;
      }
      for (std::int64_t d = 0; d < dim; ++d) out[r * dim + d] = q(out[r * dim + d] / std::sqrt(ss));
    }
    return out;
  }
  double log_decay(Decay decay) {
    const auto logsigmoid = [](double x) { return -std::log1p(std::exp(-x)); };
    switch (decay) {
      case Decay::kWeak:
        return q(logsigmoid(uniform()) / 10.0);
      case Decay::kStrong:
        return q(logsigmoid(uniform()) / 0.01);
      case Decay::kModerate:
        break;
    }
    const double g = logsigmoid(normal() + 2.0);
    return uniform() < 0.1 ? 0.0 : q(g);
  }

 private:
  std::mt19937_64 rng_;
  bool quantize_;
};

Shape make_shape(const ProblemSpec& spec) {
  Shape s;
  s.tokens = std::accumulate(spec.lengths.begin(), spec.lengths.end(), std::int64_t{0});
  s.qk_heads = spec.qk_heads;
  s.v_heads = spec.v_heads;
  s.key_dim = spec.key_dim;
  s.value_dim = spec.value_dim;
  if (spec.lengths.size() > 1) {
    s.cu_seqlens.push_back(0);
    for (std::int64_t len : spec.lengths) s.cu_seqlens.push_back(s.cu_seqlens.back() + len);
  }
  return s;
}

}  // namespace

Case make_case(Member member, const ProblemSpec& spec) {
  Draw draw(spec.seed, spec.quantize);
  const MemberTraits tr = traits(member);
  Case c;
  Problem& p = c.problem;
  p.shape = make_shape(spec);
  const Shape& s = p.shape;
  p.q = draw.unit_rows(s.tokens * s.qk_heads, s.key_dim);
  p.k = draw.unit_rows(s.tokens * s.qk_heads, s.key_dim);
  p.v = draw.normals(s.v_size());
  p.g.resize(static_cast<std::size_t>(s.tokens * s.v_heads * gate_width(tr.gate, s.key_dim)));
  for (double& g : p.g) g = draw.log_decay(spec.decay);
  if (tr.delta_rule) {
    p.beta.resize(static_cast<std::size_t>(s.tokens * s.v_heads));
    for (double& b : p.beta) b = draw.q(1.0 / (1.0 + std::exp(-draw.normal())));
  }
  if (spec.initial_state) p.h0 = draw.normals(s.state_size(), 0.5);
  p.scale = 1.0 / std::sqrt(static_cast<double>(s.key_dim));
  p.layout = spec.layout;
  c.cot.d_o = draw.normals(s.v_size());
  if (spec.final_state_grad) c.cot.d_final_state = draw.normals(s.state_size());
  return c;
}

Recurrence make_recurrence(GateKind gate, const ProblemSpec& spec) {
  // The q, k, v, g, h0 of a gated, delta-rule member, then per-channel strengths.
  const Member base = gate == GateKind::kChannel  ? Member::kKda
                      : gate == GateKind::kScalar ? Member::kGatedDeltaNet
                                                  : Member::kDeltaNet;
  const Case c = make_case(base, spec);
  Recurrence r{c.problem.shape, gate, c.problem.q, c.problem.k,  c.problem.v,
               c.problem.g,     {},   {},          c.problem.h0, c.problem.scale,
               c.problem.layout};
  Draw draw(spec.seed ^ 0x9e3779b97f4a7c15ULL, spec.quantize);
  const Shape& s = r.shape;
  r.erase.resize(static_cast<std::size_t>(s.tokens * s.v_heads * s.key_dim));
  r.write.resize(static_cast<std::size_t>(s.tokens * s.v_heads * s.value_dim));
  for (double& b : r.erase) b = draw.uniform();
  for (double& w : r.write) w = draw.q(2.0 * draw.uniform());
  return r;
}

std::string describe(Member member, const ProblemSpec& spec) {
  // Appends one piece at a time (GCC 12's -Wrestrict misfires on long operator+ chains).
  std::string out(name(member));
  out += "/T=";
  for (std::size_t i = 0; i < spec.lengths.size(); ++i) {
    if (i > 0) out += '+';
    out += std::to_string(spec.lengths[i]);
  }
  out += "/H=" + std::to_string(spec.qk_heads);
  out += "/HV=" + std::to_string(spec.v_heads);
  out += "/K=" + std::to_string(spec.key_dim);
  out += "/V=" + std::to_string(spec.value_dim);
  out += spec.decay == Decay::kWeak     ? "/weak"
         : spec.decay == Decay::kStrong ? "/strong"
                                        : "/moderate";
  out += spec.layout == StateLayout::kKV ? "/kv" : "/vk";
  if (spec.initial_state) out += "/h0";
  out += "/seed=" + std::to_string(spec.seed);
  return out;
}

}  // namespace kcv::glr::testing
