// File: glr/check/case_spec.hpp
// What glr_check runs: a CaseSpec describes one problem shape and input recipe (sequence lengths,
// batch or varlen packing with int32/int64 cu_seqlens, heads, head dims, decay regime, state
// layout, which optional states exist, g/β dtypes, seed); every spec runs for every member.
// Lists: tiny (one small varlen case, for the threaded CPU emulator), quick (a few small shapes)
// and full (T ∈ {1, 63, 64, 65, 1000, 8192}, D ∈ {64, 100, 128}, GVA, skewed varlen, both layouts,
// strong and weak decay, K ≠ V).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kcv/glr/gpu.hpp"

namespace kcv::glr::check {

/// Per-token log-decay recipes (fla's test: g = logsigmoid(x) / normalizer).
enum class Decay {
  kWeak,      ///< logsigmoid(U(0,1)) / 10        ≈ −0.05 per token
  kModerate,  ///< logsigmoid(N(0,1) + 2), one in ten set to 0
  kStrong,    ///< logsigmoid(U(0,1)) / 0.01      ≈ −50 per token
};

struct CaseSpec {
  std::string label;
  std::vector<std::int64_t> lengths;  ///< one per sequence
  bool varlen = false;                ///< packed with cu_seqlens (else a batch of equal lengths)
  gpu::IndexType index_type = gpu::IndexType::kInt64;
  std::int64_t qk_heads = 1;
  std::int64_t v_heads = 1;
  std::int64_t key_dim = 64;
  std::int64_t value_dim = 64;
  Decay decay = Decay::kModerate;
  StateLayout layout = StateLayout::kKV;
  bool initial_state = true;
  bool final_state_grad = true;
  gpu::DType gate_dtype = gpu::DType::kFloat32;
  gpu::DType beta_dtype = gpu::DType::kBFloat16;
  std::uint64_t seed = 1;
};

std::vector<CaseSpec> tiny_cases();  ///< for the threaded emulator under TSan
std::vector<CaseSpec> quick_cases();
std::vector<CaseSpec> full_cases();

/// "T=1000x2 H=1/2 K=128 V=100 moderate vk h0 dht g:f32 b:bf16" — one line per case.
std::string describe(const CaseSpec& spec);

}  // namespace kcv::glr::check
