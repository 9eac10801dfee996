// File: glr/check/emulator/emulated_device.cpp
// The CPU Runner of emulated_device.hpp. It mirrors glr/launch/api.cpp step for step (index and
// input prep, the member's stage sequence from stage_sequence.cuh, then B6, the dβ cast and the
// GVA group sums) with the same Params and workspace layout (workspace.hpp); only the launch
// policy differs: every CTA of a grid runs on host threads.
#include "check/emulator/emulated_device.hpp"

#include <cstring>
#include <thread>
#include <type_traits>
#include <vector>

#include "check/emulator/cuda_shim.hpp"  // first: the CUDA execution model for the kernels
#include "glr/kernels/stage_common.cuh"
#include "glr/kernels/stage_sequence.cuh"
#include "glr/launch/member_dispatch.hpp"
#include "glr/launch/validate.hpp"
#include "glr/launch/workspace.hpp"

namespace kcv::glr::gpu::detail {
/// The dynamic shared memory of the emulated CTA (the kernels declare it extern).
alignas(16) float4 smem_raw[232448 / sizeof(float4)];
}  // namespace kcv::glr::gpu::detail

namespace kcv::glr::check {
namespace {

using gpu::detail::bf16;
using gpu::detail::Params;

// Runs body() once per CTA of `grid` with `threads` host threads per CTA.
template <typename Body>
Status run_grid(dim3 grid, std::size_t shared_bytes, int threads, Body&& body) {
  if (shared_bytes > sizeof(gpu::detail::smem_raw))
    return make_error(ErrorCode::kInternal, "shared memory over the sm_90 limit", "emulator");
  blockDim = dim3(static_cast<unsigned>(threads));
  const auto each_cta = [&](auto&& per_cta) {
    for (unsigned z = 0; z < grid.z; ++z)
      for (unsigned y = 0; y < grid.y; ++y)
        for (unsigned x = 0; x < grid.x; ++x) per_cta(uint3{x, y, z});
  };
  if (threads == 1) {
    threadIdx = uint3{0, 0, 0};
    each_cta([&](uint3 b) {
      std::memset(gpu::detail::smem_raw, 0xff, shared_bytes);
      blockIdx = b;
      body();
    });
    return {};
  }
  std::barrier<> barrier(threads);
  emulator::cta_barrier = &barrier;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      threadIdx = uint3{static_cast<unsigned>(t), 0, 0};
      each_cta([&](uint3 b) {
        if (t == 0) std::memset(gpu::detail::smem_raw, 0xff, shared_bytes);
        barrier.arrive_and_wait();
        blockIdx = b;
        body();
        barrier.arrive_and_wait();
      });
    });
  for (std::thread& th : pool) th.join();
  emulator::cta_barrier = nullptr;
  return {};
}

struct EmulatedLaunch {
  int threads = 1;

  template <typename... Args>
  Status operator()(const char* /*stage*/, void (*kernel)(Args...), dim3 grid,
                    std::size_t shared_bytes, std::type_identity_t<Args>... args) const {
    return run_grid(grid, shared_bytes, threads, [&] { kernel(args...); });
  }
};

// "Device" memory: host bytes, poisoned with 0xFF (NaN in bf16 and fp32) like the GPU harness.
struct Buffer {
  std::vector<std::uint8_t> bytes;
  explicit Buffer(std::size_t n = 0) : bytes(n, 0xff) {}
  template <typename T>
  static Buffer of(const std::vector<T>& v) {
    Buffer b;
    const auto* p = reinterpret_cast<const std::uint8_t*>(v.data());
    b.bytes.assign(p, p + v.size() * sizeof(T));
    return b;
  }
  void* get() { return bytes.empty() ? nullptr : bytes.data(); }
};

template <typename GateT, typename BetaT>
Status input_prep(const EmulatedLaunch& launch, const Params& p, const void* g, const void* beta) {
  const dim3 grid(static_cast<unsigned>(p.chunk_bound), static_cast<unsigned>(p.v_heads));
  return launch("gate_prep", gpu::detail::gate_prep_kernel<GateT, BetaT>, grid, 0, p,
                static_cast<const GateT*>(g), static_cast<const BetaT*>(beta));
}

template <typename GateT, typename BetaT>
Status gate_grad(const EmulatedLaunch& launch, const Params& p, void* dg, void* dbeta) {
  const dim3 grid(static_cast<unsigned>(p.chunk_bound), static_cast<unsigned>(p.v_heads));
  return launch("gate_grad", gpu::detail::gate_grad_kernel<GateT, BetaT>, grid, 0, p,
                static_cast<GateT*>(dg), static_cast<BetaT*>(dbeta));
}

Status prep(const EmulatedLaunch& l, const HostInputs& in, const Params& p, const void* g,
            const void* beta) {
  const bool g32 = in.cfg.gate_dtype == gpu::DType::kFloat32;
  const bool b32 = in.cfg.beta_dtype == gpu::DType::kFloat32;
  if (g == nullptr && beta == nullptr) return {};
  if (g32 && b32) return input_prep<float, float>(l, p, g, beta);
  if (g32) return input_prep<float, bf16>(l, p, g, beta);
  if (b32) return input_prep<bf16, float>(l, p, g, beta);
  return input_prep<bf16, bf16>(l, p, g, beta);
}

Status finish(const EmulatedLaunch& l, const HostInputs& in, const Params& p, void* dg,
              void* dbeta) {
  const bool g32 = in.cfg.gate_dtype == gpu::DType::kFloat32;
  const bool b32 = in.cfg.beta_dtype == gpu::DType::kFloat32;
  if (dg == nullptr && dbeta == nullptr) return {};
  if (g32 && b32) return gate_grad<float, float>(l, p, dg, dbeta);
  if (g32) return gate_grad<float, bf16>(l, p, dg, dbeta);
  if (b32) return gate_grad<bf16, float>(l, p, dg, dbeta);
  return gate_grad<bf16, bf16>(l, p, dg, dbeta);
}

DeviceTensor tensor(const char* name, gpu::DType dtype, const Buffer& b) {
  return DeviceTensor{name, dtype, b.bytes};
}

}  // namespace

Expected<DeviceResults> run_emulated(const HostInputs& in, int threads_per_cta) {
  const EmulatedLaunch launch{threads_per_cta};
  const Shape& s = in.shape;
  const MemberTraits tr = traits(in.member);
  const std::size_t g_bytes = in.cfg.gate_dtype == gpu::DType::kFloat32 ? 4 : 2;
  const std::size_t b_bytes = in.cfg.beta_dtype == gpu::DType::kFloat32 ? 4 : 2;
  const auto n = [](std::int64_t x) { return static_cast<std::size_t>(x); };
  Buffer q = Buffer::of(in.q), k = Buffer::of(in.k), v = Buffer::of(in.v), g = Buffer::of(in.g),
         beta = Buffer::of(in.beta), h0 = Buffer::of(in.h0), d_o = Buffer::of(in.d_o),
         d_final = Buffer::of(in.d_final);
  const bool i32 = in.cfg.cu_seqlens_type == gpu::IndexType::kInt32;
  Buffer cu = i32 ? Buffer::of(in.cu32) : Buffer::of(in.cu64);
  Buffer o(n(s.v_size()) * 2), ht(n(s.state_size()) * 4), dq(n(s.qk_size()) * 2),
      dk(n(s.qk_size()) * 2), dv(n(s.v_size()) * 2),
      dg(n(s.tokens * s.v_heads * gate_width(tr.gate, s.key_dim)) * g_bytes),
      dbeta(tr.delta_rule ? n(s.tokens * s.v_heads) * b_bytes : 0), dh0(n(s.state_size()) * 4);

  const gpu::Inputs args{q.get(),    k.get(),
                         v.get(),    g.get(),
                         beta.get(), static_cast<const float*>(h0.get()),
                         cu.get(),   in.cu64.empty() ? nullptr : in.cu64.data()};
  if (Status st = gpu::detail::validate_inputs(in.dims, in.cfg, args); !st) return st.error();
  const gpu::detail::Extents e = gpu::detail::extents(in.dims, in.cfg);
  Params sizing;
  Buffer ws(gpu::detail::carve_workspace(in.dims, e, true, nullptr, sizing));

  for (const bool backward : {false, true}) {
    std::memset(ws.bytes.data(), 0xff, ws.bytes.size());
    Params p = gpu::detail::make_params(in.dims, in.cfg, e, args);
    gpu::detail::carve_workspace(in.dims, e, backward, reinterpret_cast<std::byte*>(ws.get()), p);
    const auto* cu_ptr = cu.get();
    Status st = i32 ? launch("index", gpu::detail::index_kernel<std::int32_t>, dim3(1), 0, p,
                             static_cast<const std::int32_t*>(cu_ptr), in.dims.seq_len)
                    : launch("index", gpu::detail::index_kernel<std::int64_t>, dim3(1), 0, p,
                             static_cast<const std::int64_t*>(cu_ptr), in.dims.seq_len);
    if (!st) return st.error();
    if (st = prep(launch, in, p, args.g, args.beta); !st) return st.error();
    if (!backward) {
      p.o = static_cast<bf16*>(o.get());
      p.final_state = static_cast<float*>(ht.get());
      st = gpu::detail::for_member(in.member, [&]<GateKind kGate, bool kDelta>() {
        return gpu::detail::forward_sequence<kGate, kDelta>(p, launch);
      });
      if (!st) return st.error();
      continue;
    }
    p.d_o = static_cast<const bf16*>(d_o.get());
    p.d_final = static_cast<const float*>(d_final.get());
    p.dv = static_cast<bf16*>(dv.get());
    p.dh0 = static_cast<float*>(dh0.get());
    st = gpu::detail::for_member(in.member, [&]<GateKind kGate, bool kDelta>() {
      return gpu::detail::backward_sequence<kGate, kDelta>(p, launch);
    });
    if (!st) return st.error();
    if (st = finish(launch, in, p, dg.get(), dbeta.get()); !st) return st.error();
    const dim3 grid(static_cast<unsigned>(p.tokens), static_cast<unsigned>(p.qk_heads));
    if (st = launch("group_sum", gpu::detail::group_sum_kernel, grid, 0, p, p.dq_head,
                    static_cast<bf16*>(dq.get()));
        !st)
      return st.error();
    if (st = launch("group_sum", gpu::detail::group_sum_kernel, grid, 0, p, p.dk_head,
                    static_cast<bf16*>(dk.get()));
        !st)
      return st.error();
  }
  DeviceResults r;
  r.tensors.push_back(tensor("o", gpu::DType::kBFloat16, o));
  r.tensors.push_back(tensor("ht", gpu::DType::kFloat32, ht));
  r.tensors.push_back(tensor("dq", gpu::DType::kBFloat16, dq));
  r.tensors.push_back(tensor("dk", gpu::DType::kBFloat16, dk));
  r.tensors.push_back(tensor("dv", gpu::DType::kBFloat16, dv));
  if (!dg.bytes.empty()) r.tensors.push_back(tensor("dg", in.cfg.gate_dtype, dg));
  if (!dbeta.bytes.empty()) r.tensors.push_back(tensor("dbeta", in.cfg.beta_dtype, dbeta));
  r.tensors.push_back(tensor("dh0", gpu::DType::kFloat32, dh0));
  return r;
}

}  // namespace kcv::glr::check
