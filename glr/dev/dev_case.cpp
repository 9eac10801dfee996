// File: glr/dev/dev_case.cpp
// The shared pieces of the tensor-core forward's checks (dev_case.hpp).
#include "glr/dev/dev_case.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>

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
  const auto at = [](const std::vector<double>& x, std::int64_t i) {
    return x[static_cast<std::size_t>(i)];
  };
  for (std::int64_t t = 0; t < s.tokens; ++t) {
    for (std::int64_t d = 0; d < kd; ++d) {
      out.q.push_back(at(p.q, (t * s.qk_heads + h) * kd + d));
      out.k.push_back(at(p.k, (t * s.qk_heads + h) * kd + d));
    }
    for (std::int64_t e = 0; e < vd; ++e) out.v.push_back(at(p.v, (t * s.v_heads + hv) * vd + e));
    if (!p.g.empty()) out.g.push_back(at(p.g, t * s.v_heads + hv));
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

}  // namespace kcv::glr::dev
