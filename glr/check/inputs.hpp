// File: glr/check/inputs.hpp
// One generated problem in two forms: the bytes the GPU launcher takes (bf16 q, k, v, dO; g and
// β in their configured dtypes; fp32 states; int32/int64 cu_seqlens) and the fp64 Problem and
// Cotangents of the reference, built from exactly the same rounded values. Inputs follow fla's
// test recipe (gdn-spec.md §12): q, k l2-normalised Gaussian rows, v, dO, dht Gaussian,
// β = σ(N(0,1)), h0 = N(0, 0.25), g per CaseSpec::decay; seeded std::mt19937_64.
#pragma once

#include <cstdint>
#include <vector>

#include "check/case_spec.hpp"
#include "kcv/glr/gpu.hpp"
#include "kcv/glr/problem.hpp"

namespace kcv::glr::check {

struct HostInputs {
  Member member = Member::kGatedDeltaNet;
  gpu::Dims dims;
  gpu::Config cfg;
  std::vector<std::uint16_t> q, k, v, d_o;  ///< bf16 bits
  std::vector<std::uint8_t> g, beta;        ///< raw bytes of cfg.gate_dtype / cfg.beta_dtype
  std::vector<float> h0, d_final;           ///< empty when absent
  std::vector<std::int32_t> cu32;           ///< cu_seqlens when varlen and int32
  std::vector<std::int64_t> cu64;           ///< cu_seqlens when varlen (always filled then)
  Problem problem;                          ///< fp64, cu_seqlens always explicit
  Cotangents cot;
};

HostInputs make_inputs(Member member, const CaseSpec& spec);

/// The value-head rows of token t: index of element (t, hv, e) in v / o / dO.
inline std::int64_t v_index(const Shape& s, std::int64_t t, std::int64_t hv, std::int64_t e) {
  return (t * s.v_heads + hv) * s.value_dim + e;
}

}  // namespace kcv::glr::check
