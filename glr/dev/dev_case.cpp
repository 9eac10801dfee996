// File: glr/dev/dev_case.cpp
// The shared pieces of the tensor-core forward's checks (dev_case.hpp).
#include "glr/dev/dev_case.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>
#include <type_traits>

#include "kcv/glr/precision.hpp"

namespace kcv::glr::dev {
namespace {

std::vector<bf16> to_bf16(const std::vector<double>& x) {
  std::vector<bf16> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = __float2bfloat16_rn(static_cast<float>(x[i]));
  return out;
}

std::vector<float> to_float(const std::vector<double>& x) {
  return std::vector<float>(x.begin(), x.end());
}

float bf16_value(bf16 x) {
  std::uint16_t b;
  std::memcpy(&b, &x, sizeof b);
  const std::uint32_t w = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &w, sizeof f);
  return f;
}

}  // namespace

HostTensors host_tensors(const Problem& p) {
  const Shape& s = p.shape;
  HostTensors t;
  t.dims.batch = 1;
  t.dims.seq_len = s.tokens;
  t.dims.qk_heads = s.qk_heads;
  t.dims.v_heads = s.v_heads;
  t.dims.key_dim = s.key_dim;
  t.dims.value_dim = s.value_dim;
  t.dims.num_seqs = s.cu_seqlens.empty() ? 0 : s.sequences();
  t.q = to_bf16(p.q);
  t.k = to_bf16(p.k);
  t.v = to_bf16(p.v);
  t.beta = to_bf16(p.beta);
  t.g = to_float(p.g);
  t.h0 = to_float(p.h0);
  t.cu_seqlens = s.cu_seqlens;
  return t;
}

Expected<Expectation> expect(Member member, const Problem& p) {
  Expected<Outputs> ref = chunked_forward(member, p);
  if (!ref) return ref.error();
  Expected<ForwardBounds> tau = forward_bounds(member, p, *ref, contract_for(Grade::kBf16));
  if (!tau) return tau.error();
  return Expectation{std::move(*ref), std::move(*tau)};
}

Problem slice_head(const Problem& p, std::int64_t hv) {
  const Shape& s = p.shape;
  const std::int64_t h = hv / (s.v_heads / s.qk_heads);
  Problem out;
  out.shape = s;
  out.shape.qk_heads = 1;
  out.shape.v_heads = 1;
  out.scale = p.scale;
  out.layout = p.layout;
  const std::int64_t kd = s.key_dim, vd = s.value_dim;
  // g is [T, HV] for a scalar gate, [T, HV, K] per channel, empty without a gate.
  const auto gate_width = static_cast<std::int64_t>(p.g.size()) / (s.tokens * s.v_heads);
  const auto at = [](const std::vector<double>& x, std::int64_t i) {
    return x[static_cast<std::size_t>(i)];
  };
  for (std::int64_t t = 0; t < s.tokens; ++t) {
    for (std::int64_t d = 0; d < kd; ++d) {
      out.q.push_back(at(p.q, (t * s.qk_heads + h) * kd + d));
      out.k.push_back(at(p.k, (t * s.qk_heads + h) * kd + d));
    }
    for (std::int64_t e = 0; e < vd; ++e) out.v.push_back(at(p.v, (t * s.v_heads + hv) * vd + e));
    for (std::int64_t d = 0; d < gate_width; ++d)
      out.g.push_back(at(p.g, (t * s.v_heads + hv) * gate_width + d));
    if (!p.beta.empty()) out.beta.push_back(at(p.beta, t * s.v_heads + hv));
  }
  if (!p.h0.empty())
    for (std::int64_t n = 0; n < s.sequences(); ++n)
      for (std::int64_t i = 0; i < kd * vd; ++i)
        out.h0.push_back(at(p.h0, (n * s.v_heads + hv) * kd * vd + i));
  return out;
}

Expected<Expectation> expect_by_head(Member member, const Problem& p) {
  const Shape& s = p.shape;
  const std::int64_t kd = s.key_dim, vd = s.value_dim, hvs = s.v_heads;
  const auto idx = [](std::int64_t i) { return static_cast<std::size_t>(i); };
  std::vector<Expected<Expectation>> parts(idx(hvs), Expected<Expectation>(Error{}));
  std::vector<std::thread> threads;
  for (std::int64_t hv = 0; hv < hvs; ++hv)
    threads.emplace_back([&, hv] { parts[idx(hv)] = expect(member, slice_head(p, hv)); });
  for (std::thread& t : threads) t.join();
  Expectation all;
  all.ref.o.resize(idx(s.v_size()));
  all.tau.o.resize(idx(s.v_size()));
  all.ref.final_state.resize(idx(s.state_size()));
  all.tau.final_state.resize(idx(s.state_size()));
  for (std::int64_t hv = 0; hv < hvs; ++hv) {
    if (!parts[idx(hv)]) return parts[idx(hv)].error();
    const Expectation& e = *parts[idx(hv)];
    for (std::int64_t t = 0; t < s.tokens; ++t)
      for (std::int64_t x = 0; x < vd; ++x) {
        all.ref.o[idx((t * hvs + hv) * vd + x)] = e.ref.o[idx(t * vd + x)];
        all.tau.o[idx((t * hvs + hv) * vd + x)] = e.tau.o[idx(t * vd + x)];
      }
    for (std::int64_t n = 0; n < s.sequences(); ++n)
      for (std::int64_t i = 0; i < kd * vd; ++i) {
        all.ref.final_state[idx((n * hvs + hv) * kd * vd + i)] =
            e.ref.final_state[idx(n * kd * vd + i)];
        all.tau.final_state[idx((n * hvs + hv) * kd * vd + i)] =
            e.tau.final_state[idx(n * kd * vd + i)];
      }
  }
  return all;
}

std::string Judgement::describe() const {
  char text[160];
  std::snprintf(text, sizeof text, "o %.3g  ht %.3g  (err/tau, pass <= 1)  non-finite %lld  %s",
                o_ratio, ht_ratio, static_cast<long long>(nonfinite), pass() ? "PASS" : "FAIL");
  return text;
}

Judgement judge(const std::vector<bf16>& o, const std::vector<float>& final_state,
                const Expectation& e) {
  Judgement j;
  for (std::size_t i = 0; i < o.size(); ++i) {
    const double y = bf16_value(o[i]);
    if (!std::isfinite(y)) {
      ++j.nonfinite;
      continue;
    }
    j.o_ratio = std::max(j.o_ratio, std::fabs(y - e.ref.o[i]) / e.tau.o[i]);
  }
  for (std::size_t i = 0; i < final_state.size(); ++i) {
    const double y = final_state[i];
    if (!std::isfinite(y)) {
      ++j.nonfinite;
      continue;
    }
    j.ht_ratio = std::max(j.ht_ratio, std::fabs(y - e.ref.final_state[i]) / e.tau.final_state[i]);
  }
  return j;
}

void poison(const Problem& p, std::vector<bf16>& o, std::vector<float>& final_state) {
  __nv_bfloat16_raw bits;
  bits.x = 0xffff;
  const bf16 nan(bits);
  o.assign(static_cast<std::size_t>(p.shape.v_size()), nan);
  final_state.assign(static_cast<std::size_t>(p.shape.state_size()), std::nanf(""));
}

// ------------------------------------------------------------------------------ the backward

Cotangents kernel_cotangents(const Cotangents& cot) {
  Cotangents out = cot;
  for (double& x : out.d_o) x = bf16_value(__float2bfloat16_rn(static_cast<float>(x)));
  for (double& x : out.d_final_state) x = static_cast<float>(x);
  return out;
}

HostCotangents host_cotangents(const Cotangents& cot) {
  return HostCotangents{to_bf16(cot.d_o), to_float(cot.d_final_state)};
}

Expected<BackwardExpectation> expect_backward(Member member, const Problem& p,
                                              const Cotangents& cot) {
  Expected<Gradients> ref = chunked_backward(member, p, cot);
  if (!ref) return ref.error();
  Expected<BackwardBounds> tau = backward_bounds(member, p, cot, *ref, contract_for(Grade::kBf16));
  if (!tau) return tau.error();
  return BackwardExpectation{std::move(*ref), std::move(*tau)};
}

Expected<BackwardExpectation> expect_backward_by_head(Member member, const Problem& p,
                                                      const Cotangents& cot) {
  const Shape& s = p.shape;
  if (s.qk_heads != s.v_heads)
    return make_error(ErrorCode::kInvalidArgument, "expect_backward_by_head: H must equal HV",
                      "v_heads");
  const std::int64_t kd = s.key_dim, vd = s.value_dim, hvs = s.v_heads;
  const auto idx = [](std::int64_t i) { return static_cast<std::size_t>(i); };
  std::vector<Expected<BackwardExpectation>> parts(idx(hvs),
                                                   Expected<BackwardExpectation>(Error{}));
  std::vector<std::thread> threads;
  for (std::int64_t hv = 0; hv < hvs; ++hv)
    threads.emplace_back([&, hv] {
      Cotangents c;
      for (std::int64_t t = 0; t < s.tokens; ++t)
        for (std::int64_t x = 0; x < vd; ++x)
          c.d_o.push_back(cot.d_o[idx((t * hvs + hv) * vd + x)]);
      if (!cot.d_final_state.empty())
        for (std::int64_t n = 0; n < s.sequences(); ++n)
          for (std::int64_t i = 0; i < kd * vd; ++i)
            c.d_final_state.push_back(cot.d_final_state[idx((n * hvs + hv) * kd * vd + i)]);
      parts[idx(hv)] = expect_backward(member, slice_head(p, hv), c);
    });
  for (std::thread& t : threads) t.join();
  BackwardExpectation all;
  const auto place = [&](auto& dst_ref, auto& dst_tau, std::size_t size) {
    dst_ref.assign(size, 0.0);
    dst_tau.assign(size, 0.0);
  };
  const std::int64_t gate_width = static_cast<std::int64_t>(p.g.size()) / (s.tokens * hvs);
  place(all.ref.dq, all.tau.dq, p.q.size());
  place(all.ref.dk, all.tau.dk, p.k.size());
  place(all.ref.dv, all.tau.dv, p.v.size());
  place(all.ref.dg, all.tau.dg, p.g.size());
  const bool delta = !p.beta.empty();
  place(all.ref.dbeta, all.tau.dbeta, delta ? p.beta.size() : 0);
  place(all.ref.dh0, all.tau.dh0, idx(s.state_size()));
  for (std::int64_t hv = 0; hv < hvs; ++hv) {
    if (!parts[idx(hv)]) return parts[idx(hv)].error();
    const BackwardExpectation& e = *parts[idx(hv)];
    for (std::int64_t t = 0; t < s.tokens; ++t) {
      for (std::int64_t x = 0; x < kd; ++x) {
        const std::size_t to = idx((t * hvs + hv) * kd + x), from = idx(t * kd + x);
        all.ref.dq[to] = e.ref.dq[from];
        all.tau.dq[to] = e.tau.dq[from];
        all.ref.dk[to] = e.ref.dk[from];
        all.tau.dk[to] = e.tau.dk[from];
      }
      for (std::int64_t x = 0; x < vd; ++x) {
        const std::size_t to = idx((t * hvs + hv) * vd + x), from = idx(t * vd + x);
        all.ref.dv[to] = e.ref.dv[from];
        all.tau.dv[to] = e.tau.dv[from];
      }
      for (std::int64_t x = 0; x < gate_width; ++x) {  // dg: [T, HV] or [T, HV, K]
        const std::size_t to = idx((t * hvs + hv) * gate_width + x), from = idx(t * gate_width + x);
        all.ref.dg[to] = e.ref.dg[from];
        all.tau.dg[to] = e.tau.dg[from];
      }
      if (delta) {
        all.ref.dbeta[idx(t * hvs + hv)] = e.ref.dbeta[idx(t)];
        all.tau.dbeta[idx(t * hvs + hv)] = e.tau.dbeta[idx(t)];
      }
    }
    for (std::int64_t n = 0; n < s.sequences(); ++n)
      for (std::int64_t i = 0; i < kd * vd; ++i) {
        all.ref.dh0[idx((n * hvs + hv) * kd * vd + i)] = e.ref.dh0[idx(n * kd * vd + i)];
        all.tau.dh0[idx((n * hvs + hv) * kd * vd + i)] = e.tau.dh0[idx(n * kd * vd + i)];
      }
  }
  return all;
}

HostGradients poisoned_gradients(Member member, const Problem& p) {
  __nv_bfloat16_raw bits;
  bits.x = 0xffff;
  const bf16 nan(bits);
  HostGradients g;
  g.dq.assign(p.q.size(), nan);
  g.dk.assign(p.k.size(), nan);
  g.dv.assign(p.v.size(), nan);
  if (traits(member).gate != GateKind::kNone) g.dg.assign(p.g.size(), std::nanf(""));
  if (traits(member).delta_rule) g.dbeta.assign(p.beta.size(), nan);
  g.dh0.assign(static_cast<std::size_t>(p.shape.state_size()), std::nanf(""));
  return g;
}

std::string describe_bits(const HostGradients& g) {
  char text[160];
  std::snprintf(text, sizeof text,
                "bits dq %016llx dk %016llx dv %016llx dg %016llx dbeta %016llx dh0 %016llx",
                static_cast<unsigned long long>(bits_digest(g.dq)),
                static_cast<unsigned long long>(bits_digest(g.dk)),
                static_cast<unsigned long long>(bits_digest(g.dv)),
                static_cast<unsigned long long>(bits_digest(g.dg)),
                static_cast<unsigned long long>(bits_digest(g.dbeta)),
                static_cast<unsigned long long>(bits_digest(g.dh0)));
  return text;
}

double BackwardJudgement::worst() const { return std::max({dq, dk, dv, dg, dbeta, dh0}); }

std::string BackwardJudgement::describe() const {
  char text[200];
  std::snprintf(text, sizeof text,
                "dq %.3g  dk %.3g  dv %.3g  dg %.3g  dbeta %.3g  dh0 %.3g  (err/tau, pass <= 1)  "
                "non-finite %lld  %s",
                dq, dk, dv, dg, dbeta, dh0, static_cast<long long>(nonfinite),
                pass() ? "PASS" : "FAIL");
  return text;
}

namespace {

template <typename T>
double worst_ratio(const std::vector<T>& y, const std::vector<double>& ref,
                   const std::vector<double>& tau, std::int64_t& nonfinite) {
  double worst = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    double v;
    if constexpr (std::is_same_v<T, bf16>)
      v = bf16_value(y[i]);
    else
      v = y[i];
    if (!std::isfinite(v)) {
      ++nonfinite;
      continue;
    }
    worst = std::max(worst, std::fabs(v - ref[i]) / tau[i]);
  }
  return worst;
}

}  // namespace

BackwardJudgement judge_backward(const HostGradients& g, const BackwardExpectation& e) {
  BackwardJudgement j;
  j.dq = worst_ratio(g.dq, e.ref.dq, e.tau.dq, j.nonfinite);
  j.dk = worst_ratio(g.dk, e.ref.dk, e.tau.dk, j.nonfinite);
  j.dv = worst_ratio(g.dv, e.ref.dv, e.tau.dv, j.nonfinite);
  j.dg = worst_ratio(g.dg, e.ref.dg, e.tau.dg, j.nonfinite);
  j.dbeta = worst_ratio(g.dbeta, e.ref.dbeta, e.tau.dbeta, j.nonfinite);
  j.dh0 = worst_ratio(g.dh0, e.ref.dh0, e.tau.dh0, j.nonfinite);
  return j;
}

}  // namespace kcv::glr::dev
