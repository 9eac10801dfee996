// File: glr/check/mma_adapter.cpp
// The padding, widening and slicing of mma_adapter.hpp.
#include "check/mma_adapter.hpp"

#include <cstring>
#include <string>

#include "check/bf16.hpp"

namespace kcv::glr::check {
namespace {

using dev::kMmaDim;

Error refused(const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument, what, "glr tensor-core candidate");
}

auto size(std::int64_t n) { return static_cast<std::size_t>(n); }

/// [rows, width] -> [rows, 128], the new columns zero.
template <typename T>
std::vector<T> pad_columns(const std::vector<T>& x, std::int64_t width) {
  const std::size_t rows = x.size() / size(width);
  std::vector<T> out(rows * kMmaDim, T{0});
  for (std::size_t r = 0; r < rows; ++r)
    std::memcpy(&out[r * kMmaDim], &x[r * size(width)], size(width) * sizeof(T));
  return out;
}

/// [rows, 128] -> [rows, width].
template <typename T>
std::vector<T> slice_columns(const std::vector<T>& x, std::int64_t width) {
  const std::size_t rows = x.size() / kMmaDim;
  std::vector<T> out(rows * size(width));
  for (std::size_t r = 0; r < rows; ++r)
    std::memcpy(&out[r * size(width)], &x[r * kMmaDim], size(width) * sizeof(T));
  return out;
}

/// The state's rows and columns in the call's layout: [K, V] or [V, K].
struct StateDims {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
};

StateDims state_dims(const HostInputs& in) {
  const Shape& s = in.shape;
  if (in.cfg.layout == StateLayout::kKV) return {s.key_dim, s.value_dim};
  return {s.value_dim, s.key_dim};
}

/// [states, rows, cols] -> [states, 128, 128], the new rows and columns zero.
std::vector<float> pad_states(const std::vector<float>& x, StateDims d) {
  const std::size_t states = x.size() / size(d.rows * d.cols);
  std::vector<float> out(states * kMmaDim * kMmaDim, 0.0f);
  for (std::size_t n = 0; n < states; ++n)
    for (std::int64_t r = 0; r < d.rows; ++r)
      std::memcpy(&out[(n * kMmaDim + size(r)) * kMmaDim],
                  &x[(n * size(d.rows) + size(r)) * size(d.cols)], size(d.cols) * sizeof(float));
  return out;
}

/// [states, 128, 128] -> [states, rows, cols].
std::vector<float> slice_states(const std::vector<float>& x, StateDims d) {
  const std::size_t states = x.size() / (kMmaDim * kMmaDim);
  std::vector<float> out(states * size(d.rows * d.cols));
  for (std::size_t n = 0; n < states; ++n)
    for (std::int64_t r = 0; r < d.rows; ++r)
      std::memcpy(&out[(n * size(d.rows) + size(r)) * size(d.cols)],
                  &x[(n * kMmaDim + size(r)) * kMmaDim], size(d.cols) * sizeof(float));
  return out;
}

template <typename T>
std::vector<T> as(const std::vector<std::uint8_t>& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

template <typename T>
std::vector<std::uint8_t> bytes_of(const std::vector<T>& x) {
  std::vector<std::uint8_t> out(x.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), x.data(), out.size());
  return out;
}

/// g as fp32: bf16 widened (exact), fp32 as is.
std::vector<float> gate_as_f32(const HostInputs& in) {
  if (in.cfg.gate_dtype == gpu::DType::kFloat32) return as<float>(in.g);
  std::vector<float> out;
  for (std::uint16_t b : as<std::uint16_t>(in.g)) out.push_back(bf16_to_float(b));
  return out;
}

/// β as bf16: fp32 rounded to nearest even (the one rounding the adaptation adds), bf16 as is.
std::vector<std::uint16_t> beta_as_bf16(const HostInputs& in) {
  if (in.cfg.beta_dtype == gpu::DType::kBFloat16) return as<std::uint16_t>(in.beta);
  std::vector<std::uint16_t> out;
  for (float f : as<float>(in.beta)) out.push_back(float_to_bf16(f));
  return out;
}

/// dg from the kernels' fp32 into g's dtype (rounded to nearest even into bf16).
std::vector<std::uint8_t> gate_grad_bytes(const HostInputs& in,
                                          const std::vector<std::uint8_t>& f32) {
  if (in.cfg.gate_dtype == gpu::DType::kFloat32) return f32;
  std::vector<std::uint16_t> out;
  for (float f : as<float>(f32)) out.push_back(float_to_bf16(f));
  return bytes_of(out);
}

/// dβ from the kernels' bf16 into β's dtype (widened to fp32 exactly).
std::vector<std::uint8_t> beta_grad_bytes(const HostInputs& in,
                                          const std::vector<std::uint8_t>& bf16) {
  if (in.cfg.beta_dtype == gpu::DType::kBFloat16) return bf16;
  std::vector<float> out;
  for (std::uint16_t b : as<std::uint16_t>(bf16)) out.push_back(bf16_to_float(b));
  return bytes_of(out);
}

}  // namespace

Expected<MmaInputs> mma_inputs(const HostInputs& in) {
  const Shape& s = in.shape;
  const MemberTraits tr = traits(in.member);
  if (s.key_dim < 1 || s.value_dim < 1 || s.key_dim > kMmaDim || s.value_dim > kMmaDim)
    return refused("the tensor-core kernels take head dims 1..128 (zero-padded to 128), got K = " +
                   std::to_string(s.key_dim) + ", V = " + std::to_string(s.value_dim));
  MmaInputs x;
  x.member = in.member;
  x.dims.batch = 1;
  x.dims.seq_len = s.tokens;
  x.dims.qk_heads = s.qk_heads;
  x.dims.v_heads = s.v_heads;
  x.dims.key_dim = kMmaDim;
  x.dims.value_dim = kMmaDim;
  x.dims.num_seqs = s.sequences();
  x.scale = in.cfg.scale;  // K^-1/2 of the call's own K: the padded columns add nothing to q·k
  x.layout = in.cfg.layout;
  x.q = pad_columns(in.q, s.key_dim);
  x.k = pad_columns(in.k, s.key_dim);
  x.v = pad_columns(in.v, s.value_dim);
  x.d_o = pad_columns(in.d_o, s.value_dim);
  if (tr.gate == GateKind::kScalar) x.g = gate_as_f32(in);
  if (tr.gate == GateKind::kChannel) x.g = pad_columns(gate_as_f32(in), s.key_dim);
  if (tr.delta_rule) x.beta = beta_as_bf16(in);
  const StateDims sd = state_dims(in);
  x.h0 = pad_states(in.h0, sd);
  x.dht = pad_states(in.d_final, sd);
  x.cu_seqlens = s.cu_seqlens;  // explicit for every packing (HostInputs::shape)
  if (x.cu_seqlens.empty()) x.cu_seqlens = {0, s.tokens};
  return x;
}

MmaOutputBytes mma_output_bytes(const MmaInputs& x) {
  const gpu::Dims& d = x.dims;
  const MemberTraits tr = traits(x.member);
  const std::size_t t = size(d.seq_len);
  const std::size_t state = size(d.num_seqs * d.v_heads) * kMmaDim * kMmaDim * sizeof(float);
  MmaOutputBytes b{};
  b[kMmaO] = t * size(d.v_heads) * kMmaDim * 2;
  b[kMmaHt] = state;
  b[kMmaDq] = t * size(d.qk_heads) * kMmaDim * 2;
  b[kMmaDk] = b[kMmaDq];
  b[kMmaDv] = b[kMmaO];
  const std::size_t gate_width = tr.gate == GateKind::kChannel ? kMmaDim : 1;
  b[kMmaDg] = tr.gate != GateKind::kNone ? t * size(d.v_heads) * gate_width * sizeof(float) : 0;
  b[kMmaDbeta] = tr.delta_rule ? t * size(d.v_heads) * 2 : 0;
  b[kMmaDh0] = state;
  return b;
}

Expected<std::size_t> mma_workspace_bytes(const MmaInputs& x) {
  Expected<std::size_t> fwd = dev::mma_forward_workspace_bytes(x.member, x.dims);
  if (!fwd) return fwd.error();
  Expected<std::size_t> bwd = dev::mma_backward_workspace_bytes(x.member, x.dims);
  if (!bwd) return bwd.error();
  return *fwd > *bwd ? *fwd : *bwd;
}

Expected<dev::MmaForwardParams> mma_forward_block(const MmaInputs& x, const MmaBuffers& b,
                                                  void* workspace, std::size_t bytes) {
  dev::MmaForwardTensors t;
  t.q = b.q;
  t.k = b.k;
  t.v = b.v;
  t.g = static_cast<const float*>(b.g);
  t.beta = b.beta;
  t.h0 = static_cast<const float*>(b.h0);
  t.cu_seqlens = static_cast<const std::int64_t*>(b.cu_seqlens);
  t.o = b.out[kMmaO];
  t.final_state = static_cast<float*>(b.out[kMmaHt]);
  return dev::mma_forward_params(x.member, x.dims, x.scale, x.layout, t, workspace, bytes);
}

Expected<dev::MmaBackwardParams> mma_backward_block(const MmaInputs& x, const MmaBuffers& b,
                                                    void* workspace, std::size_t bytes) {
  dev::MmaBackwardTensors t;
  t.fwd.q = b.q;
  t.fwd.k = b.k;
  t.fwd.v = b.v;
  t.fwd.g = static_cast<const float*>(b.g);
  t.fwd.beta = b.beta;
  t.fwd.h0 = static_cast<const float*>(b.h0);
  t.fwd.cu_seqlens = static_cast<const std::int64_t*>(b.cu_seqlens);
  t.d_o = b.d_o;
  t.dht = static_cast<const float*>(b.dht);
  t.dq = b.out[kMmaDq];
  t.dk = b.out[kMmaDk];
  t.dv = b.out[kMmaDv];
  t.dg = static_cast<float*>(b.out[kMmaDg]);
  t.dbeta = b.out[kMmaDbeta];
  t.dh0 = static_cast<float*>(b.out[kMmaDh0]);
  return dev::mma_backward_params(x.member, x.dims, x.scale, x.layout, t, workspace, bytes);
}

DeviceResults mma_results(const HostInputs& in, const MmaOutputData& padded) {
  const Shape& s = in.shape;
  const StateDims sd = state_dims(in);
  const auto bf16_cols = [&](MmaOutput o, std::int64_t width) {
    return bytes_of(slice_columns(as<std::uint16_t>(padded[o]), width));
  };
  const auto states = [&](MmaOutput o) { return bytes_of(slice_states(as<float>(padded[o]), sd)); };
  DeviceResults r;
  r.tensors.push_back({"o", gpu::DType::kBFloat16, bf16_cols(kMmaO, s.value_dim)});
  r.tensors.push_back({"ht", gpu::DType::kFloat32, states(kMmaHt)});
  r.tensors.push_back({"dq", gpu::DType::kBFloat16, bf16_cols(kMmaDq, s.key_dim)});
  r.tensors.push_back({"dk", gpu::DType::kBFloat16, bf16_cols(kMmaDk, s.key_dim)});
  r.tensors.push_back({"dv", gpu::DType::kBFloat16, bf16_cols(kMmaDv, s.value_dim)});
  if (!padded[kMmaDg].empty()) {
    const bool channel = traits(in.member).gate == GateKind::kChannel;
    const std::vector<std::uint8_t> dg =
        channel ? bytes_of(slice_columns(as<float>(padded[kMmaDg]), s.key_dim)) : padded[kMmaDg];
    r.tensors.push_back({"dg", in.cfg.gate_dtype, gate_grad_bytes(in, dg)});
  }
  if (!padded[kMmaDbeta].empty())
    r.tensors.push_back({"dbeta", in.cfg.beta_dtype, beta_grad_bytes(in, padded[kMmaDbeta])});
  r.tensors.push_back({"dh0", gpu::DType::kFloat32, states(kMmaDh0)});
  return r;
}

}  // namespace kcv::glr::check
