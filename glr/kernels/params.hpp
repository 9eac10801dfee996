// File: glr/kernels/params.hpp
// The one parameter block every GLR stage kernel takes by value: problem sizes, the caller's
// tensors and the fp32 workspace tensors that carry results from one stage to the next. It is
// plain data, visible to the host launcher (g++) and to the kernels (nvcc). Pointers a stage does
// not use stay null. Workspace tensors (all fp32, written before they are read):
//   token-major [T, HV, X]: gate_cum (X = gate width), beta, aqk / tmat / da / dtv / dl (X = 64),
//     wmat / dq_raw / dk_raw / dw / dx / dq_head / dk_head (X = K), umat / delta / d_delta (X = V),
//     dbeta_v / dbeta (X = 1);  dgate (X = gate width)
//   chunk-major [chunks, HV, K, V]: states (state entering each chunk), d_states (∂L/∂ state
//     leaving each chunk, fla's dh); [chunks, HV, K]: hd = Σ_v H ⊙ dH per key channel.
// Chunk index cg runs over all chunks of all sequences: chunk_offsets[n] is the first chunk of
// sequence n, bounds[n] its first token (both int64, built on the device from cu_seqlens).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace kcv::glr::gpu::detail {

using bf16 = __nv_bfloat16;

struct Params {
  // Sizes. tokens = B·T (all packed tokens); group = HV / H.
  std::int64_t tokens = 0;
  std::int64_t sequences = 0;
  std::int64_t chunk_bound = 0;  ///< grid size of chunk-parallel stages (≥ the real chunk count)
  int qk_heads = 0;
  int v_heads = 0;
  int group = 1;
  int key_dim = 0;
  int value_dim = 0;
  int gate_width = 0;  ///< 0, 1 or key_dim
  float scale = 1.0f;
  bool state_kv = true;  ///< states stored [.., K, V] (else [.., V, K])

  // Sequence index (workspace).
  std::int64_t* bounds = nullptr;         ///< [N+1] token offsets
  std::int64_t* chunk_offsets = nullptr;  ///< [N+1] chunk offsets

  // Caller inputs.
  const bf16* q = nullptr;
  const bf16* k = nullptr;
  const bf16* v = nullptr;
  const float* h0 = nullptr;
  const bf16* d_o = nullptr;
  const float* d_final = nullptr;

  // Forward workspace.
  float* gate_cum = nullptr;
  float* beta = nullptr;
  float* aqk = nullptr;
  float* tmat = nullptr;
  float* wmat = nullptr;
  float* umat = nullptr;
  float* states = nullptr;
  float* delta = nullptr;

  // Backward workspace.
  float* d_states = nullptr;
  float* d_delta = nullptr;
  float* dq_raw = nullptr;
  float* dk_raw = nullptr;
  float* dw = nullptr;
  float* hd = nullptr;
  float* da = nullptr;
  float* dtv = nullptr;
  float* dbeta_v = nullptr;
  float* dx = nullptr;
  float* dl = nullptr;
  float* dq_head = nullptr;
  float* dk_head = nullptr;
  float* dgate = nullptr;
  float* dbeta = nullptr;

  // Caller outputs.
  bf16* o = nullptr;
  float* final_state = nullptr;
  bf16* dv = nullptr;
  float* dh0 = nullptr;
};

}  // namespace kcv::glr::gpu::detail
