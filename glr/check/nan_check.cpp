// File: glr/check/nan_check.cpp
// The NaN propagation check of nan_check.hpp.
#include "check/nan_check.hpp"

#include <cmath>
#include <functional>
#include <string>

#include "check/bf16.hpp"
#include "check/inputs.hpp"

namespace kcv::glr::check {
namespace {

enum class Expect { kFinite, kNaN, kAny };

constexpr std::int64_t kSeq = 1;
constexpr std::int64_t kHead = 1;         // value head; its q/k head is 0 (group of 2)
constexpr std::int64_t kTokenInSeq = 70;  // second chunk of the sequence, not chunk-aligned

struct Where {
  std::int64_t seq = 0;
  std::int64_t token = 0;  ///< position within the sequence
  std::int64_t head = 0;   ///< value head, or q/k head for dq, dk
};

// Checks every element of a per-token tensor [T, heads, width]; returns "" or the first mismatch.
std::string check_tokens(const DeviceTensor& t, const Shape& s, std::int64_t heads,
                         const std::function<Expect(const Where&)>& expect) {
  const std::vector<double> x = t.values();
  if (x.empty()) return "";
  const std::int64_t width = static_cast<std::int64_t>(x.size()) / (s.tokens * heads);
  for (std::int64_t n = 0; n < s.sequences(); ++n)
    for (std::int64_t tok = s.seq_begin(n); tok < s.seq_end(n); ++tok)
      for (std::int64_t h = 0; h < heads; ++h)
        for (std::int64_t w = 0; w < width; ++w) {
          const Expect e = expect({n, tok - s.seq_begin(n), h});
          const bool nan = std::isnan(x[(tok * heads + h) * width + w]);
          if ((e == Expect::kNaN && !nan) || (e == Expect::kFinite && nan))
            return t.name + ": " + (nan ? "NaN" : "finite") + " at sequence " + std::to_string(n) +
                   " token " + std::to_string(tok - s.seq_begin(n)) + " head " + std::to_string(h) +
                   " column " + std::to_string(w);
        }
  return "";
}

// States [N, HV, K·V]: NaN exactly in the poisoned one (or nowhere if `none`).
std::string check_states(const DeviceTensor& t, const Shape& s, bool none) {
  const std::vector<double> x = t.values();
  const std::int64_t kv = s.key_dim * s.value_dim;
  for (std::int64_t n = 0; n < s.sequences(); ++n)
    for (std::int64_t hv = 0; hv < s.v_heads; ++hv)
      for (std::int64_t i = 0; i < kv; ++i) {
        const bool want_nan = !none && n == kSeq && hv == kHead;
        if (std::isnan(x[(n * s.v_heads + hv) * kv + i]) != want_nan)
          return t.name + ": wrong NaN pattern in state of sequence " + std::to_string(n) +
                 " head " + std::to_string(hv);
      }
  return "";
}

}  // namespace

CheckResult nan_propagation(Member member, const Runner& run_problem) {
  CheckResult r{"nan-propagation/", false, ""};
  r.name += name(member);
  CaseSpec spec;
  spec.lengths = {100, 200, 90};
  spec.varlen = true;
  spec.qk_heads = 2;
  spec.v_heads = 4;
  spec.seed = 77;
  HostInputs in = make_inputs(member, spec);
  const Shape& s = in.problem.shape;
  const std::int64_t t_star = s.seq_begin(kSeq) + kTokenInSeq;
  for (std::int64_t e = 0; e < s.value_dim; ++e) in.v[v_index(s, t_star, kHead, e)] = kBf16NaN;
  Expected<DeviceResults> gpu = run_problem(in);
  if (!gpu) {
    r.detail = gpu.error().to_string();
    return r;
  }
  const std::int64_t group = s.v_heads / s.qk_heads;
  const std::int64_t chunk_start = kTokenInSeq / 64 * 64;
  const auto at_or_after = [&](const Where& w, std::int64_t head) {
    return w.seq == kSeq && w.head == head && w.token >= kTokenInSeq;
  };
  // dk, dg, dβ: poisoned from t*, free before t*'s chunk, unasserted in between.
  const auto chunk_rule = [&](std::int64_t head) {
    return [&, head](const Where& w) {
      if (w.seq != kSeq || w.head != head || w.token < chunk_start) return Expect::kFinite;
      return w.token >= kTokenInSeq ? Expect::kNaN : Expect::kAny;
    };
  };
  const auto exact = [&](std::int64_t head) {
    return
        [&, head](const Where& w) { return at_or_after(w, head) ? Expect::kNaN : Expect::kFinite; };
  };
  const auto finite = [](const Where&) { return Expect::kFinite; };
  std::string bad;
  const auto run = [&](const char* name, std::int64_t heads,
                       const std::function<Expect(const Where&)>& f) {
    if (!bad.empty()) return;
    if (const DeviceTensor* t = gpu->find(name)) bad = check_tokens(*t, s, heads, f);
  };
  run("o", s.v_heads, exact(kHead));
  run("dq", s.qk_heads, exact(kHead / group));
  if (traits(member).delta_rule) {
    run("dk", s.qk_heads, chunk_rule(kHead / group));
  } else {  // without the delta rule dk_t depends on v_t only
    run("dk", s.qk_heads, [&](const Where& w) {
      return w.seq == kSeq && w.head == kHead / group && w.token == kTokenInSeq ? Expect::kNaN
                                                                                : Expect::kFinite;
    });
  }
  run("dv", s.v_heads, finite);
  run("dg", s.v_heads, chunk_rule(kHead));
  run("dbeta", s.v_heads, chunk_rule(kHead));
  if (bad.empty()) bad = check_states(*gpu->find("ht"), s, false);
  if (bad.empty()) bad = check_states(*gpu->find("dh0"), s, true);
  r.pass = bad.empty();
  r.detail = r.pass ? "NaN at token " + std::to_string(kTokenInSeq) +
                          " of sequence 1, head 1: "
                          "poisons exactly o[t >= t*], ht, dq[t >= t*]; dv, dh0 and other "
                          "sequences/heads stay finite"
                    : bad;
  return r;
}

}  // namespace kcv::glr::check
