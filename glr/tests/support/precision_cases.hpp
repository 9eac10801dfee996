// File: glr/tests/support/precision_cases.hpp
// The cases the precision-contract tests run (forward and backward): T ∈ {1, 63, 64, 65, 200,
// 1000}, varlen 1+150+7+64+3 with HV = 2, GVA H = 2 / HV = 4 at T = 130, moderate decay; and T =
// 200 under strong decay (≈ −50 per token, the anchored and per-pair factors underflow); K = 64, V
// = 32, h0 given. Also the worst |got − want| / tau over a tensor.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "support/problems.hpp"

namespace kcv::glr::testing {

struct Scenario {
  std::string label;
  ProblemSpec spec;
};

inline std::vector<Scenario> scenarios() {
  std::vector<Scenario> out;
  const auto add = [&](std::string label, std::vector<std::int64_t> lengths, std::int64_t h,
                       std::int64_t hv) {
    ProblemSpec s;
    s.lengths = std::move(lengths);
    s.qk_heads = h;
    s.v_heads = hv;
    s.key_dim = 64;
    s.value_dim = 32;
    s.seed = out.size() + 301;
    out.push_back({std::move(label), s});
  };
  for (std::int64_t t : {1, 63, 64, 65, 200, 1000}) {
    std::string label = "T";
    label += std::to_string(t);  // not "T" + ...: GCC 12 -Wrestrict false positive
    add(label, {t}, 1, 1);
  }
  add("Varlen", {1, 150, 7, 64, 3}, 1, 2);
  add("Gva", {130}, 2, 4);
  add("Strong", {200}, 1, 1);
  out.back().spec.decay = Decay::kStrong;
  return out;
}

/// Under strong decay a gated member's carried state (and state gradient) reaches the outputs
/// with weight e^{−50·t}: a rounding of it is invisible, so the tests assert it only elsewhere.
inline bool state_decays_away(Member m, const Scenario& s) {
  return s.spec.decay == Decay::kStrong && traits(m).gate != GateKind::kNone;
}

inline double worst_ratio(const std::vector<double>& got, const std::vector<double>& want,
                          const std::vector<double>& tau) {
  double r = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    r = std::max(r, std::fabs(got[i] - want[i]) / tau[i]);
  return r;
}

}  // namespace kcv::glr::testing
