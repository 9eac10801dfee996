// File: glr/dev/chunked_mma_forward.hpp
// A GLR forward under development whose matrix products run on tensor cores (mma.sync m16n8k16,
// bf16 operands, fp32 accumulation): the chunked WY algorithm of the fp64 chunked reference
// (include/kcv/glr/chunked.hpp, gdn-spec.md §4–§5) in two launches, for K = V = 128, chunk 64,
// under the bf16 precision grade (docs/glr/precision-contract.md), with an fp32 state carry.
// Written once over the gate kind and the delta rule, instantiated for all six members (LA, SSD,
// DeltaNet, GDN; GLA and KDA with the per-channel gate).
// The kernels are chunked_mma_forward.cuh; docs/glr/tensor-core-forward.md is the design.
//
// This header is plain data and host declarations (g++ and nvcc): the parameter block, the
// workspace layout and the two ways to run the kernels, on a GPU (chunked_mma_forward.cu) and in
// the host emulation (host_runner.hpp).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kcv/expected.hpp"
#include "kcv/glr/gpu.hpp"
#include "kcv/glr/member.hpp"
#include "kcv/glr/problem.hpp"

namespace kcv::glr::dev {

using bf16 = __nv_bfloat16;

inline constexpr int kMmaChunk = 64;     ///< C
inline constexpr int kMmaDim = 128;      ///< K = V
inline constexpr int kMmaThreads = 128;  ///< 4 warps: one per 16-row block of a chunk

/// The state pass's column groups: warp w + 4h takes row block w and the value columns
/// kBV/kStateGroups·h.. of its CTA's tile (of o, Δ and H), so that the CTA, alone on its
/// multiprocessor and serial over the chunks, has 8 warps, each step's dependent products half
/// the columns long (16 columns a warp at tile 32, 32 at 64). GDN's state_output at B1·T8192·H32
/// on the H100 took 449 µs in 4 warps, 355 in 8 and 414 in 16 (docs/glr/tensor-core-forward.md):
/// past 8 warps the step's shared-memory traffic, not its columns, sets its time. Every element
/// keeps its sum order: the products' k-steps are a warp's over its own columns.
inline constexpr int kStateGroups = 2;
inline constexpr int kStateComputeThreads = kMmaThreads * kStateGroups;
/// The state pass's copy warps, after its compute warps: they alone issue the cp.async copies of
/// the next chunk's operands, so that the compute warps never wait on the copies' address
/// registers (an LDGSTS reads them late, behind the L1's queue: a long-scoreboard stall for the
/// next instruction that writes one, 20 % of GDN's state_output samples when the compute warps
/// issued the copies themselves; docs/glr/ncu_phases_gdn.md).
inline constexpr int kStateCopyWarps = 4;
inline constexpr int kStateThreads = kStateComputeThreads + 32 * kStateCopyWarps;

/// Everything both kernels read, by value. Workspace tensors are chunk-slot-major: the chunk j of
/// sequence n lives in slot slot_base(n) + j, slot_base(n) = ⌊bos_n / 64⌋ + n (disjoint for
/// different chunks, < slots = ⌊tokens / 64⌋ + N), so no chunk index has to be built first;
/// rows past a ragged chunk's end hold zeros.
///   w, u     [slots, HV, 64, 128] bf16   W = T X, U = T Ṽ (delta rule only)
///   a        [slots, HV, 64, 64]  bf16   A^qk = (Q Kᵀ) ⊙ Γ, lower triangle incl. the diagonal
///   factors  [slots, HV, 2, 64]   fp32   e_i = exp(G_i), r_i = exp(G_last − G_i); 0 past the end;
///            a per-channel gate: e_last,d = exp(G_last,d), d = 0..127, in the same 128 floats
///   qbar, kbar [slots, HV, 64, 128] bf16   per-channel gate only (GLA, KDA): Q̄ = Q ⊙ E, K̄ = K ⊙ R
///            (E_id = exp(G_id), R_id = exp(G_last,d − G_id)), the operands of Q̄·H and K̄ᵀΔ
///   states   [slots + N, HV, 128, 128] bf16   optional (the backward's recompute): the state
///            entering each chunk at its slot, the final state of sequence n at slot `slots + n`,
///            [K, V], the same bf16 values the state pass multiplies with
///   t_inv    [slots, HV, 64, 64]  bf16   optional (the backward's recompute, delta rule): bf16(T),
///            the values W = T X and U = T Ṽ multiply with
///   gram_diag [slots, HV, 64, 16] fp32   optional (the same, KDA): the diagonal blocks of
///            P = (K Kᵀ) ⊙ Γ per pair, P_ij at row i, column j − 16⌊i/16⌋ for j < i, 0 for j ≥ i
///            (the prepare kernel's per-pair sums, read by wy_channel_kernel for dβ)
///   delta    [slots, HV, 64, 128] bf16   optional (the same): bf16(Δ), the values A^qk·Δ and
///            the state update read; may be `u` itself (the kept workspace's layout): the state
///            pass loads chunk j's U before it writes chunk j's Δ, and nothing reads U after it
struct MmaForwardParams {
  std::int64_t tokens = 0;     ///< all packed tokens (B·T)
  std::int64_t sequences = 0;  ///< N
  std::int64_t seq_len = 0;    ///< length of every sequence when cu_seqlens is null
  std::int64_t slots = 0;
  const std::int64_t* cu_seqlens = nullptr;  ///< N+1 offsets, or null (fixed length)
  int qk_heads = 0;
  int v_heads = 0;
  int group = 1;  ///< HV / H
  float scale = 1.0f;
  bool state_kv = true;  ///< states [.., K, V] (else [.., V, K])
  /// The state pass's Q·H, W·H and Kᵀ·(r ⊙ Δ) on wgmma (forward version 13, state_output_kernel's
  /// kWg) at value tile 32; false, or tile 64 (where the wgmma pass spills), runs them on mma.sync
  /// (version 12). The same bits either way in the host emulation and on one H100
  /// (docs/glr/tensor-core-forward.md).
  bool state_wgmma = true;

  const bf16* q = nullptr;     ///< [T, H, 128]
  const bf16* k = nullptr;     ///< [T, H, 128]
  const bf16* v = nullptr;     ///< [T, HV, 128]
  const float* g = nullptr;    ///< log-decay: [T, HV] scalar gate, [T, HV, 128] per channel
  const bf16* beta = nullptr;  ///< [T, HV] (delta rule only)
  const float* h0 = nullptr;   ///< [N, HV, 128, 128] or null (zero)

  bf16* w = nullptr;
  bf16* u = nullptr;
  bf16* qbar = nullptr;  ///< per-channel gate only
  bf16* kbar = nullptr;  ///< per-channel gate only
  bf16* a = nullptr;
  float* factors = nullptr;
  bf16* states = nullptr;      ///< or null: no states kept
  bf16* t_inv = nullptr;       ///< or null: T not kept
  float* gram_diag = nullptr;  ///< or null: P's diagonal blocks not kept (KDA only)
  bf16* delta = nullptr;       ///< or null: Δ not kept

  bf16* o = nullptr;             ///< [T, HV, 128], or null (the backward's recompute: not written)
  float* final_state = nullptr;  ///< [N, HV, 128, 128] or null
};

/// The caller's tensors (device pointers; host pointers for the emulation). q, k, v, beta bf16.
struct MmaForwardTensors {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const float* g = nullptr;
  const void* beta = nullptr;
  const float* h0 = nullptr;
  const std::int64_t* cu_seqlens = nullptr;
  void* o = nullptr;
  float* final_state = nullptr;
};

/// Workspace bytes for `member` at `dims` (K = V = 128; LA, SSD, DeltaNet or GDN).
[[nodiscard]] Expected<std::size_t> mma_forward_workspace_bytes(Member member,
                                                                const gpu::Dims& dims);

/// The parameter block: checks dims, the member, which pointers must be present and their
/// 16-byte alignment, and lays the workspace out in `workspace` (mma_forward_workspace_bytes).
[[nodiscard]] Expected<MmaForwardParams> mma_forward_params(Member member, const gpu::Dims& dims,
                                                            float scale, StateLayout layout,
                                                            const MmaForwardTensors& t,
                                                            void* workspace, std::size_t bytes);

/// Value columns per CTA of the state pass (32 or 64): 32 while N·HV·4 CTAs fit on the device's
/// multiprocessors at one CTA each, else 64 (half the CTAs, twice the work each).
int default_value_tile(const MmaForwardParams& p, int multiprocessors);

/// Device milliseconds of each launch of one sequence, in launch order, by stage name
/// ("prepare", "state_output"; "state" in the backward's recompute, ...): the stage profile of a
/// timed call.
struct StageTimes {
  std::vector<std::pair<std::string, float>> ms;
};

/// Both launches on `stream` (chunked_mma_forward.cu). value_tile: 32 or 64. With `times`, each
/// launch is timed with CUDA events and the call waits for the stream.
[[nodiscard]] Status mma_forward(Member member, const MmaForwardParams& p, int value_tile,
                                 cudaStream_t stream, StageTimes* times = nullptr);

}  // namespace kcv::glr::dev
