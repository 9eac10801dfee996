// File: glr/check/device_run.cpp
// The device side of glr_check (see device_run.hpp).
#include "check/device_run.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>

#include "check/device_buffer.hpp"
#include "glr/launch/cuda_status.hpp"
#include "kcv/glr/gpu.hpp"

namespace kcv::glr::check {
namespace {

struct Outputs {
  DeviceBuffer o, ht, dq, dk, dv, dg, dbeta, dh0;
};

Status allocate_outputs(const HostInputs& in, Outputs& out) {
  const std::size_t off = in.device_offset;
  const Shape& s = in.shape;
  const MemberTraits tr = traits(in.member);
  const std::size_t g_bytes = in.cfg.gate_dtype == gpu::DType::kFloat32 ? 4 : 2;
  const std::size_t b_bytes = in.cfg.beta_dtype == gpu::DType::kFloat32 ? 4 : 2;
  const auto n = [](std::int64_t x) { return static_cast<std::size_t>(x); };
  KCV_GLR_TRY(out.o.allocate(n(s.v_size()) * 2, off));
  KCV_GLR_TRY(out.ht.allocate(n(s.state_size()) * 4, off));
  KCV_GLR_TRY(out.dq.allocate(n(s.qk_size()) * 2, off));
  KCV_GLR_TRY(out.dk.allocate(n(s.qk_size()) * 2, off));
  KCV_GLR_TRY(out.dv.allocate(n(s.v_size()) * 2, off));
  KCV_GLR_TRY(
      out.dg.allocate(n(s.tokens * s.v_heads * gate_width(tr.gate, s.key_dim)) * g_bytes, off));
  KCV_GLR_TRY(out.dbeta.allocate(tr.delta_rule ? n(s.tokens * s.v_heads) * b_bytes : 0, off));
  KCV_GLR_TRY(out.dh0.allocate(n(s.state_size()) * 4, off));
  return {};
}

Status collect(const HostInputs& in, const Outputs& out, DeviceResults& r) {
  const auto add = [&](const char* name, gpu::DType dtype, const DeviceBuffer& b) -> Status {
    if (b.bytes() == 0) return {};
    DeviceTensor t{name, dtype, {}};
    KCV_GLR_TRY(b.download(t.bytes));
    r.tensors.push_back(std::move(t));
    return {};
  };
  KCV_GLR_TRY(add("o", gpu::DType::kBFloat16, out.o));
  KCV_GLR_TRY(add("ht", gpu::DType::kFloat32, out.ht));
  KCV_GLR_TRY(add("dq", gpu::DType::kBFloat16, out.dq));
  KCV_GLR_TRY(add("dk", gpu::DType::kBFloat16, out.dk));
  KCV_GLR_TRY(add("dv", gpu::DType::kBFloat16, out.dv));
  KCV_GLR_TRY(add("dg", in.cfg.gate_dtype, out.dg));
  KCV_GLR_TRY(add("dbeta", in.cfg.beta_dtype, out.dbeta));
  KCV_GLR_TRY(add("dh0", gpu::DType::kFloat32, out.dh0));
  return {};
}

}  // namespace

Expected<DeviceResults> run_device(const HostInputs& in) {
  DeviceBuffer q, k, v, g, beta, h0, cu, d_o, d_final, ws;
  if (Status st = q.upload(in.q, in.device_offset); !st) return st.error();
  if (Status st = k.upload(in.k, in.device_offset); !st) return st.error();
  if (Status st = v.upload(in.v, in.device_offset); !st) return st.error();
  if (Status st = g.upload(in.g, in.device_offset); !st) return st.error();
  if (Status st = beta.upload(in.beta, in.device_offset); !st) return st.error();
  if (Status st = h0.upload(in.h0, in.device_offset); !st) return st.error();
  if (Status st = d_o.upload(in.d_o, in.device_offset); !st) return st.error();
  if (Status st = d_final.upload(in.d_final, in.device_offset); !st) return st.error();
  const bool i32 = in.cfg.cu_seqlens_type == gpu::IndexType::kInt32;
  if (Status st = i32 ? cu.upload(in.cu32, in.device_offset) : cu.upload(in.cu64, in.device_offset);
      !st)
    return st.error();
  Outputs out;
  if (Status st = allocate_outputs(in, out); !st) return st.error();

  const gpu::Inputs args{q.get(),    k.get(),
                         v.get(),    g.get(),
                         beta.get(), static_cast<const float*>(h0.get()),
                         cu.get(),   in.cu64.empty() ? nullptr : in.cu64.data()};
  Expected<std::size_t> bytes = gpu::backward_workspace_bytes(in.dims, in.cfg);
  if (!bytes) return bytes.error();
  Expected<std::size_t> fwd_bytes = gpu::forward_workspace_bytes(in.dims, in.cfg);
  if (!fwd_bytes) return fwd_bytes.error();
  if (Status st = ws.allocate(*bytes > *fwd_bytes ? *bytes : *fwd_bytes); !st) return st.error();

  cudaStream_t stream = nullptr;
  for (DeviceBuffer* b :
       {&out.o, &out.ht, &out.dq, &out.dk, &out.dv, &out.dg, &out.dbeta, &out.dh0, &ws})
    if (Status st = b->poison(stream); !st) return st.error();
  const gpu::ForwardOutputs fwd{out.o.get(), static_cast<float*>(out.ht.get())};
  if (Status st = gpu::forward(in.dims, in.cfg, args, fwd, ws.get(), ws.bytes(), stream); !st)
    return st.error();
  if (Status st = ws.poison(stream); !st) return st.error();
  const gpu::Cotangents cot{d_o.get(), static_cast<const float*>(d_final.get())};
  const gpu::Gradients grads{out.dq.get(), out.dk.get(),    out.dv.get(),
                             out.dg.get(), out.dbeta.get(), static_cast<float*>(out.dh0.get())};
  if (Status st = gpu::backward(in.dims, in.cfg, args, cot, grads, ws.get(), ws.bytes(), stream);
      !st)
    return st.error();
  if (const cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
    return gpu::detail::cuda_error(e, "cudaDeviceSynchronize after forward + backward", __FILE__,
                                   __LINE__);
  DeviceResults r;
  if (Status st = collect(in, out, r); !st) return st.error();
  return r;
}

}  // namespace kcv::glr::check
