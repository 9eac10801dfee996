// File: include/kcv/glr/gpu.hpp
// Host launcher API of the sm_90a CUDA kernels for the gated linear recurrences (issue 4 item 3):
// forward and backward of LA, SSD / simple GLA, GLA, DeltaNet, GDN and KDA, one parameterised
// implementation of the chunk stages of gdn-spec.md §4–§10 (see docs/05_glr.md, "CUDA kernels").
//
// Tensors are device pointers in fla's contiguous token-major layouts (§2, §10):
//   q, k   [B, T, H, K]  bf16          v, o, dO  [B, T, HV, V]  bf16
//   g      [B, T, HV] (scalar gate) or [B, T, HV, K] (per-channel gate), fp32 or bf16
//   beta   [B, T, HV]    fp32 or bf16   states (h0, ht, dht, dh0) [N, HV, K, V] or [N, HV, V, K]
//   fp32
// With cu_seqlens (int32 or int64, N+1 offsets on the device) the batch must be 1 and the
// sequences are packed along T. Gradients come back in the input dtypes (dq, dk, dv bf16; dg in
// g's dtype, dβ in β's dtype; dh0 fp32), dq and dk summed over each GVA group.
//
// The namespace is kcv::glr::gpu, not ...::cuda, so that code inside kcv::glr can still reach
// libcu++'s ::cuda namespace unqualified.
//
// Every call is asynchronous on `stream`; a returned error carries file:line of the failing CUDA
// call. The calls are deterministic (no atomics; every output element is written by one thread in
// a fixed order), so two runs on the same inputs give the same bits.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kcv/expected.hpp"
#include "kcv/glr/member.hpp"
#include "kcv/glr/problem.hpp"

namespace kcv::glr::gpu {

/// Chunk size C of every stage (the chunked reference's ChunkOptions default).
inline constexpr std::int64_t kChunkSize = 64;
/// Largest head dimension (K and V) the kernels accept; any size from 1 up is padded internally.
inline constexpr std::int64_t kMaxHeadDim = 128;

enum class DType { kBFloat16, kFloat32 };
enum class IndexType { kInt32, kInt64 };

struct Dims {
  std::int64_t batch = 1;      ///< B; must be 1 when cu_seqlens is given
  std::int64_t seq_len = 0;    ///< T per batch entry; with cu_seqlens, all packed tokens
  std::int64_t qk_heads = 1;   ///< H
  std::int64_t v_heads = 1;    ///< HV, a multiple of H (GVA)
  std::int64_t key_dim = 0;    ///< K, 1..kMaxHeadDim
  std::int64_t value_dim = 0;  ///< V, 1..kMaxHeadDim
  std::int64_t num_seqs = 0;   ///< N = len(cu_seqlens) − 1 with cu_seqlens; ignored without
};

struct Config {
  Member member = Member::kGatedDeltaNet;
  float scale = 0.0f;  ///< fla's default is K^-1/2; must be finite
  StateLayout layout = StateLayout::kKV;
  DType gate_dtype = DType::kFloat32;
  DType beta_dtype = DType::kBFloat16;
  IndexType cu_seqlens_type = IndexType::kInt64;
};

/// Device pointers of the inputs. g is null for members without a gate, beta null without the
/// delta rule, h0 null for a zero initial state, cu_seqlens null for a fixed-length batch.
struct Inputs {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* g = nullptr;
  const void* beta = nullptr;
  const float* h0 = nullptr;
  const void* cu_seqlens = nullptr;
  /// Optional host copy of cu_seqlens (N+1 values); when given it is checked (starts at 0,
  /// strictly increasing, ends at seq_len). The device copy is never read back.
  const std::int64_t* cu_seqlens_host = nullptr;
};

struct ForwardOutputs {
  void* o = nullptr;             ///< [B, T, HV, V] bf16
  float* final_state = nullptr;  ///< optional [N, HV, ., .] fp32
};

struct Cotangents {
  const void* d_o = nullptr;             ///< [B, T, HV, V] bf16
  const float* d_final_state = nullptr;  ///< optional, zero when null
};

struct Gradients {
  void* dq = nullptr;     ///< [B, T, H, K] bf16
  void* dk = nullptr;     ///< [B, T, H, K] bf16
  void* dv = nullptr;     ///< [B, T, HV, V] bf16
  void* dg = nullptr;     ///< like g (required iff the member has a gate)
  void* dbeta = nullptr;  ///< like beta (required iff the member has the delta rule)
  float* dh0 = nullptr;   ///< optional [N, HV, ., .] fp32
};

/// Device workspace the forward needs, in bytes (256-byte aligned pieces).
[[nodiscard]] Expected<std::size_t> forward_workspace_bytes(const Dims& dims, const Config& cfg);
/// Device workspace the backward needs (it recomputes the forward intermediates).
[[nodiscard]] Expected<std::size_t> backward_workspace_bytes(const Dims& dims, const Config& cfg);

/// Checks dims, config and which pointers must be present; the message names the bad field.
[[nodiscard]] Status validate(const Dims& dims, const Config& cfg, const Inputs& in);

/// o = the member's output, final_state = state after each sequence (if requested).
[[nodiscard]] Status forward(const Dims& dims, const Config& cfg, const Inputs& in,
                             const ForwardOutputs& out, void* workspace,
                             std::size_t workspace_bytes, cudaStream_t stream);

/// Gradients of L = ⟨o, dO⟩ + ⟨final_state, d_final_state⟩ w.r.t. every input.
[[nodiscard]] Status backward(const Dims& dims, const Config& cfg, const Inputs& in,
                              const Cotangents& cot, const Gradients& grads, void* workspace,
                              std::size_t workspace_bytes, cudaStream_t stream);

// ------------------------------------------------------------------------------------ decode
// The decode path (fla's fused_recurrent_*): a few tokens per sequence, run token by token by one
// warp per (sequence, value head); each lane owns value columns e ≡ lane (mod 32) of the fp32
// state, so no cross-lane reduction is needed and the result is deterministic. Every tensor is
// fp32 (the caller converts; decode inputs are small); cu_seqlens, when given, is int64 on the
// device. Config's dtype fields are ignored.

/// Largest head dimension (K and V) of the decode kernel.
inline constexpr std::int64_t kMaxDecodeHeadDim = 256;

struct DecodeInputs {
  const float* q = nullptr;              ///< [B, T, H, K]
  const float* k = nullptr;              ///< [B, T, H, K]
  const float* v = nullptr;              ///< [B, T, HV, V]
  const float* g = nullptr;              ///< [B, T, HV] or [B, T, HV, K]; null without a gate
  const float* beta = nullptr;           ///< [B, T, HV]; null without the delta rule
  const std::int64_t* cu_seqlens = nullptr;  ///< N+1 offsets, or null for a fixed-length batch
};

/// Checks dims and pointers of a decode call; the message names the bad field.
[[nodiscard]] Status validate_decode(const Dims& dims, const Config& cfg, const DecodeInputs& in,
                                     const float* o, const float* state);

/// state [N, HV, ., .] in cfg.layout holds the initial state on entry (zeros for none) and the
/// final state on return; o [B, T, HV, V] receives the outputs.
[[nodiscard]] Status decode(const Dims& dims, const Config& cfg, const DecodeInputs& in, float* o,
                            float* state, cudaStream_t stream);

}  // namespace kcv::glr::gpu
