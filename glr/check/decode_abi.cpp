// File: glr/check/decode_abi.cpp
// The kcv_tensor <-> DecodeCall / DecodeResult conversions of decode_abi.hpp.
#include "check/decode_abi.hpp"

#include <cuda_fp16.h>

#include <cmath>
#include <cstring>
#include <exception>
#include <string>

#include "check/bf16.hpp"
#include "check/candidate_abi.hpp"
#include "glr/launch/decode_params.hpp"

namespace kcv::glr::check {
namespace {

Error bad(const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument, what, "glr decode candidate");
}

float half_to_float(std::uint16_t bits) {
  __half_raw raw;
  raw.x = bits;
  return __half2float(__half(raw));
}

std::uint16_t float_to_half(float f) {
  const __half_raw raw = __float2half_rn(f);
  return raw.x;
}

// The tensor's values in fp32 (exact for fp32, bf16 and fp16); an error for other dtypes.
Expected<std::vector<float>> widened(const kcv_tensor& t, const char* name) {
  const auto n = static_cast<std::size_t>(numel(t));
  std::vector<float> out(n);
  const auto* bits = static_cast<const std::uint16_t*>(t.data);
  switch (t.dtype) {
    case KCV_F32:
      if (n > 0) std::memcpy(out.data(), t.data, n * sizeof(float));
      return out;
    case KCV_BF16:
      for (std::size_t i = 0; i < n; ++i) out[i] = bf16_to_float(bits[i]);
      return out;
    case KCV_F16:
      for (std::size_t i = 0; i < n; ++i) out[i] = half_to_float(bits[i]);
      return out;
    default:
      return bad(std::string(name) + ": expected fp32, bf16 or fp16");
  }
}

// o (fp32) rounded once into `t`'s dtype, the dtype of q.
Status write_rounded(const std::vector<float>& o, kcv_tensor& t) {
  if (static_cast<std::size_t>(numel(t)) != o.size() || !contiguous(t))
    return bad("output o: size or layout differs from the kernel's");
  auto* bits = static_cast<std::uint16_t*>(t.data);
  switch (t.dtype) {
    case KCV_F32:
      if (!o.empty()) std::memcpy(t.data, o.data(), o.size() * sizeof(float));
      return {};
    case KCV_BF16:
      for (std::size_t i = 0; i < o.size(); ++i) bits[i] = float_to_bf16(o[i]);
      return {};
    case KCV_F16:
      for (std::size_t i = 0; i < o.size(); ++i) bits[i] = float_to_half(o[i]);
      return {};
    default:
      return bad("output o: expected q's dtype");
  }
}

}  // namespace

Expected<DecodeCall> decode_call(Member member, const kcv_tensor* inputs, int n_inputs,
                                 const kcv_call* call) {
  auto t = call_tensors(member, inputs, n_inputs, 0, "glr decode candidate");
  if (!t) return t.error();
  const kcv_tensor& q = *t->q;
  const kcv_tensor& k = *t->k;
  const kcv_tensor& v = *t->v;
  const kcv_tensor* g = t->g;
  const kcv_tensor* beta = t->beta;
  const kcv_tensor& h0 = *t->h0;
  if (k.dtype != q.dtype || v.dtype != q.dtype) return bad("q, k and v must share one dtype");
  if (h0.dtype != KCV_F32) return bad("h0 must be fp32");
  if (g != nullptr && g->dtype != KCV_F32 && g->dtype != KCV_BF16)
    return bad("g: expected fp32 or bf16");
  if (beta != nullptr && beta->dtype != KCV_F32 && beta->dtype != KCV_BF16)
    return bad("beta: expected fp32 or bf16");
  auto layout = call_layout(member, *t, call, "glr decode candidate");
  if (!layout) return layout.error();

  DecodeCall c;
  const std::int64_t tokens = q.shape[0];
  c.dims = layout->dims;
  c.cfg = layout->cfg;
  if (layout->varlen) c.cu = std::move(layout->offsets);
  c.o_size = tokens * c.dims.v_heads * c.dims.value_dim;
  c.device_offset = reinterpret_cast<std::uintptr_t>(q.data) / 16 % 8 * 16;
  const std::pair<const kcv_tensor*, std::vector<float>*> fields[] = {
      {&q, &c.q}, {&k, &c.k}, {&v, &c.v}, {g, &c.g}, {beta, &c.beta}, {&h0, &c.state}};
  const char* names[] = {"q", "k", "v", "g", "beta", "h0"};
  for (std::size_t i = 0; i < std::size(fields); ++i) {
    if (fields[i].first == nullptr) continue;
    auto x = widened(*fields[i].first, names[i]);
    if (!x) return x.error();
    *fields[i].second = std::move(*x);
  }
  return c;
}

Expected<gpu::detail::DecodeParams> host_params(const DecodeCall& call, DecodeResult& result) {
  result.o.assign(static_cast<std::size_t>(call.o_size), std::nanf(""));
  result.state = call.state;
  gpu::DecodeInputs in;
  in.q = call.q.data();
  in.k = call.k.data();
  in.v = call.v.data();
  in.g = call.g.empty() ? nullptr : call.g.data();
  in.beta = call.beta.empty() ? nullptr : call.beta.data();
  in.cu_seqlens = call.cu.empty() ? nullptr : call.cu.data();
  return gpu::detail::decode_params(call.dims, call.cfg, in, result.o.data(), result.state.data());
}

int run_decode_kernel(Member member, const kcv_tensor* inputs, int n_inputs, kcv_tensor* outputs,
                      int n_outputs, const kcv_call* call, const DecodeBackend& backend) {
  try {
    Expected<DecodeCall> in = decode_call(member, inputs, n_inputs, call);
    if (!in) return fail(call, in.error().to_string());
    if (n_outputs != 2)
      return fail(call, "expected 2 outputs (o, ht), got " + std::to_string(n_outputs));
    Expected<DecodeResult> r = backend(*in);
    if (!r) return fail(call, r.error().to_string());
    kcv_tensor& ht = outputs[1];
    if (outputs[0].dtype != inputs[0].dtype) return fail(call, "output o: expected q's dtype");
    if (ht.dtype != KCV_F32 || !contiguous(ht) ||
        static_cast<std::size_t>(numel(ht)) != r->state.size())
      return fail(call, "output ht: expected fp32 [N, HV, K, V]");
    if (Status st = write_rounded(r->o, outputs[0]); !st) return fail(call, st.error().to_string());
    if (!r->state.empty()) std::memcpy(ht.data, r->state.data(), r->state.size() * sizeof(float));
    return 0;
  } catch (const std::exception& e) {
    return fail(call, std::string("exception: ") + e.what());
  }
}

}  // namespace kcv::glr::check
