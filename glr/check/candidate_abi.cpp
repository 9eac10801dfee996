// File: glr/check/candidate_abi.cpp
// The kcv_tensor <-> HostInputs / DeviceResults conversions of candidate_abi.hpp.
#include "check/candidate_abi.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string_view>

namespace kcv::glr::check {
namespace {

Error bad(const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument, what, "glr candidate");
}

std::size_t element_bytes(int dtype) {
  switch (dtype) {
    case KCV_F64:
    case KCV_I64:
      return 8;
    case KCV_F32:
    case KCV_I32:
      return 4;
    case KCV_BOOL:
      return 1;
    default:
      return 2;
  }
}

template <typename T>
std::vector<T> copy_of(const kcv_tensor& t) {
  std::vector<T> out(static_cast<std::size_t>(numel(t) * element_bytes(t.dtype) / sizeof(T)));
  if (!out.empty()) std::memcpy(out.data(), t.data, out.size() * sizeof(T));
  return out;
}

Expected<gpu::DType> gate_dtype(const kcv_tensor& t, const char* name) {
  if (t.dtype == KCV_F32) return gpu::DType::kFloat32;
  if (t.dtype == KCV_BF16) return gpu::DType::kBFloat16;
  return bad(std::string(name) + ": expected fp32 or bf16");
}

}  // namespace

std::int64_t numel(const kcv_tensor& t) {
  std::int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

bool contiguous(const kcv_tensor& t) {
  std::int64_t stride = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != stride) return false;
    stride *= t.shape[d];
  }
  return true;
}

double param(const kcv_call* call, std::string_view name, double fallback) {
  for (int i = 0; call != nullptr && i < call->n_params; ++i)
    if (name == call->param_names[i]) return call->param_values[i];
  return fallback;
}

Expected<CallTensors> call_tensors(Member member, const kcv_tensor* inputs, int n_inputs, int n_own,
                                   const char* who) {
  const auto error = [who](const std::string& what) -> Error {
    return make_error(ErrorCode::kInvalidArgument, what, who);
  };
  const MemberTraits tr = traits(member);
  const bool gated = tr.gate != GateKind::kNone;
  const int want = 5 + n_own + (gated ? 1 : 0) + (tr.delta_rule ? 1 : 0);
  if (n_inputs != want)
    return error("expected " + std::to_string(want) + " inputs, got " + std::to_string(n_inputs));
  for (int i = 0; i < n_inputs; ++i)
    if (!contiguous(inputs[i])) return error("input " + std::to_string(i) + " is not contiguous");
  CallTensors t;
  int at = 0;
  t.q = &inputs[at++];
  t.k = &inputs[at++];
  t.v = &inputs[at++];
  t.g = gated ? &inputs[at++] : nullptr;
  t.beta = tr.delta_rule ? &inputs[at++] : nullptr;
  t.h0 = &inputs[at++];
  t.own = &inputs[at];
  at += n_own;
  t.cu = &inputs[at];
  if (t.q->ndim != 3 || t.v->ndim != 3 || t.cu->ndim != 1 || t.cu->dtype != KCV_I64)
    return error("q, v must be [T, heads, dim] and cu_seqlens [N + 1] int64");
  return t;
}

Expected<CallLayout> call_layout(Member member, const CallTensors& t, const kcv_call* call,
                                 const char* who) {
  const auto error = [who](const std::string& what) -> Error {
    return make_error(ErrorCode::kInvalidArgument, what, who);
  };
  CallLayout l;
  const std::int64_t tokens = t.q->shape[0];
  l.offsets = copy_of<std::int64_t>(*t.cu);
  const std::int64_t n = std::ssize(l.offsets) - 1;
  if (n < 1 || l.offsets.front() != 0 || l.offsets.back() != tokens)
    return error("cu_seqlens must run from 0 to T");
  l.dims.qk_heads = t.q->shape[1];
  l.dims.key_dim = t.q->shape[2];
  l.dims.v_heads = t.v->shape[1];
  l.dims.value_dim = t.v->shape[2];
  l.varlen = param(call, "varlen", 1.0) != 0.0;
  if (l.varlen) {
    l.dims.batch = 1;
    l.dims.seq_len = tokens;
    l.dims.num_seqs = n;
  } else {
    if (tokens % n != 0) return error("varlen = 0 needs N sequences of equal length");
    l.dims.batch = n;
    l.dims.seq_len = tokens / n;
  }
  l.cfg.member = member;
  const double scale = param(call, "scale", 1.0 / std::sqrt(static_cast<double>(l.dims.key_dim)));
  l.cfg.scale = static_cast<float>(scale);
  l.cfg.layout = param(call, "state_v_first", 0.0) != 0.0 ? StateLayout::kVK : StateLayout::kKV;
  return l;
}

Expected<HostInputs> host_inputs(Member member, const kcv_tensor* inputs, int n_inputs,
                                 const kcv_call* call) {
  auto t = call_tensors(member, inputs, n_inputs, 2, "glr candidate");
  if (!t) return t.error();
  const kcv_tensor& q = *t->q;
  const kcv_tensor& k = *t->k;
  const kcv_tensor& v = *t->v;
  const kcv_tensor* g = t->g;
  const kcv_tensor* beta = t->beta;
  const kcv_tensor& h0 = *t->h0;
  const kcv_tensor& d_o = t->own[0];
  const kcv_tensor& dht = t->own[1];
  for (const kcv_tensor* x : {&q, &k, &v, &d_o})
    if (x->dtype != KCV_BF16) return bad("q, k, v and dO must be bf16");
  if (h0.dtype != KCV_F32 || dht.dtype != KCV_F32) return bad("h0 and dht must be fp32");
  auto layout = call_layout(member, *t, call, "glr candidate");
  if (!layout) return layout.error();

  HostInputs in;
  in.member = member;
  in.dims = layout->dims;
  in.cfg = layout->cfg;
  Shape& s = in.shape;
  s.tokens = q.shape[0];
  s.qk_heads = q.shape[1];
  s.key_dim = q.shape[2];
  s.v_heads = v.shape[1];
  s.value_dim = v.shape[2];
  s.cu_seqlens = layout->offsets;
  if (layout->varlen) {
    in.cu64 = s.cu_seqlens;
    if (param(call, "cu_int32", 0.0) != 0.0) {
      for (std::int64_t x : in.cu64) in.cu32.push_back(static_cast<std::int32_t>(x));
      in.cfg.cu_seqlens_type = gpu::IndexType::kInt32;
    }
  }
  if (g != nullptr) {
    auto d = gate_dtype(*g, "g");
    if (!d) return d.error();
    in.cfg.gate_dtype = *d;
    in.g = copy_of<std::uint8_t>(*g);
  }
  if (beta != nullptr) {
    auto d = gate_dtype(*beta, "beta");
    if (!d) return d.error();
    in.cfg.beta_dtype = *d;
    in.beta = copy_of<std::uint8_t>(*beta);
  }
  in.device_offset = reinterpret_cast<std::uintptr_t>(q.data) / 16 % 8 * 16;
  in.q = copy_of<std::uint16_t>(q);
  in.k = copy_of<std::uint16_t>(k);
  in.v = copy_of<std::uint16_t>(v);
  in.d_o = copy_of<std::uint16_t>(d_o);
  in.h0 = copy_of<float>(h0);
  in.d_final = copy_of<float>(dht);
  return in;
}

Status write_outputs(const DeviceResults& results, kcv_tensor* outputs, int n_outputs) {
  if (n_outputs != std::ssize(results.tensors)) {
    return bad("expected " + std::to_string(results.tensors.size()) + " outputs, got " +
               std::to_string(n_outputs));
  }
  for (int i = 0; i < n_outputs; ++i) {
    const DeviceTensor& r = results.tensors[static_cast<std::size_t>(i)];
    kcv_tensor& t = outputs[i];
    const int dtype = r.dtype == gpu::DType::kFloat32 ? KCV_F32 : KCV_BF16;
    const auto bytes = static_cast<std::size_t>(numel(t)) * element_bytes(t.dtype);
    if (t.dtype != dtype || bytes != r.bytes.size() || !contiguous(t))
      return bad("output " + r.name + ": dtype, size or layout differs from the kernel's");
    if (bytes > 0) std::memcpy(t.data, r.bytes.data(), bytes);
  }
  return {};
}

int fail(const kcv_call* call, const std::string& message) {
  if (call != nullptr && call->error != nullptr && call->error_capacity > 0) {
    const std::size_t n =
        std::min(message.size(), static_cast<std::size_t>(call->error_capacity - 1));
    std::memcpy(call->error, message.data(), n);
    call->error[n] = '\0';
  }
  return 1;
}

int run_kernel(Member member, const kcv_tensor* inputs, int n_inputs, kcv_tensor* outputs,
               int n_outputs, const kcv_call* call, const Backend& backend) {
  try {
    Expected<HostInputs> in = host_inputs(member, inputs, n_inputs, call);
    if (!in) return fail(call, in.error().to_string());
    Expected<DeviceResults> r = backend(*in);
    if (!r) return fail(call, r.error().to_string());
    if (Status st = write_outputs(*r, outputs, n_outputs); !st)
      return fail(call, st.error().to_string());
    return 0;
  } catch (const std::exception& e) {
    return fail(call, std::string("exception: ") + e.what());
  }
}

}  // namespace kcv::glr::check
