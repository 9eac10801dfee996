// File: glr/check/inputs.hpp
// One forward + backward call as the launcher takes it, in host memory: bf16 q, k, v, dO as bits;
// g and β as raw bytes of their configured dtypes; fp32 states; int32 or int64 cu_seqlens (both
// empty for a fixed-length batch). The candidate libraries (candidate_abi.hpp) fill it from the
// tensors kcv hands them; the GPU runner (device_run.hpp) and the CPU emulation of the kernels
// (emulator/) run it.
#pragma once

#include <cstdint>
#include <vector>

#include "kcv/glr/gpu.hpp"
#include "kcv/glr/problem.hpp"

namespace kcv::glr::check {

struct HostInputs {
  Member member = Member::kGatedDeltaNet;
  gpu::Dims dims;
  gpu::Config cfg;
  Shape shape;                              ///< packed along T, cu_seqlens always explicit
  std::vector<std::uint16_t> q, k, v, d_o;  ///< bf16 bits
  std::vector<std::uint8_t> g, beta;        ///< raw bytes of cfg.gate_dtype / cfg.beta_dtype
  std::vector<float> h0, d_final;           ///< empty when absent
  std::vector<std::int32_t> cu32;           ///< cu_seqlens when varlen and int32
  std::vector<std::int64_t> cu64;           ///< cu_seqlens when varlen (always filled then)
  /// Bytes (a multiple of 16, below 128) every device input and output sits past its
  /// allocation's start: a call at another host address runs at other device addresses too
  /// (ORD-02's shifted repetitions). The CPU emulation ignores it.
  std::size_t device_offset = 0;
};

}  // namespace kcv::glr::check
