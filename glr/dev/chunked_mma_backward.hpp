// File: glr/dev/chunked_mma_backward.hpp
// The tensor-core GLR backward under development, the sibling of chunked_mma_forward.hpp: the
// reference's chunk algebra for the backward (glr/reference/chunk_backward.hpp, gdn-spec.md §6,
// §9) with mma.sync m16n8k16 (bf16 operands, fp32 accumulation), K = V = 128, chunk 64, under the
// bf16 precision grade, fp32 state-gradient carry. Every member: LA, SSD, DeltaNet, GDN, GLA and
// KDA. Given dO (and optionally dht) it returns dq, dk, dv, dg (the log-gate gradient: per token
// for SSD and GDN, per token and key channel for GLA and KDA), dβ (DeltaNet, GDN, KDA) and dh0.
// The kernels are chunked_mma_backward.cuh, chunked_mma_backward_channel.cuh and
// chunked_mma_wy_channel.cuh; docs/glr/tensor-core-backward.md is the design.
//
// Plain data and host declarations (g++ and nvcc), as the forward's header.
#pragma once

#include <cstddef>
#include <cstdint>

#include "glr/dev/chunked_mma_forward.hpp"

namespace kcv::glr::dev {

/// The gradient kernels' column groups (grad_kernel, grad_channel_kernel, wy_channel_kernel): warp
/// w + 4h takes the rows 16w.. (row block w) and the kGroupCols feature columns from kGroupCols·h
/// of each product over the feature columns (or the 16-column block h of one over the chunk's
/// columns), so that a CTA alone on its multiprocessor has 16 warps to hide the latency of its
/// products, its shared-memory reads and its exponentials, where 4 warps left each scheduler one.
/// Each element keeps the sum order of one warp per row block: the products' k-steps and the
/// per-pair loops of a 128-column warp, restricted to the group's columns.
inline constexpr int kGradGroups = 4;
inline constexpr int kGroupCols = kMmaDim / kGradGroups;
inline constexpr int kGradThreads = kMmaThreads * kGradGroups;

/// Faults the CPU test plants in the kernels to show that its judgement sees them. Always kNone
/// outside that test.
enum class BackwardFault : int {
  kNone,
  kDropIntraDiagonal,  ///< dq's intra-chunk product skips its diagonal 16×16 block
  kKeyWithoutDecay,    ///< dk's inter-chunk term without the row factor r
  kScanWithoutDecay,   ///< the dH scan carries dH without e_last
  kBoundaryAtEntry,    ///< dg's boundary term is ⟨H, dS⟩, H the state entering the chunk
  kCarryInBf16,        ///< the dH scan keeps dH in bf16 between chunks (an undeclared rounding)
  kScanWithoutW,       ///< delta rule: the dH scan leaves out −Wᵀ dΔ
  kBetaWithoutGram,    ///< delta rule: dβ leaves out the term through L (dL ⊙ K Kᵀ)
  kKeyWithoutSolve,    ///< delta rule: dk leaves out the term through L (the Gram VJP of dL)
  kGateWithoutValue,   ///< delta rule with a gate: dg leaves out − Σ v·dv
};

/// Everything the backward's kernels read. `fwd` is the forward's block for the recompute (its o
/// and final_state null, states set); the backward's own workspace:
///   dh        [slots, HV, 128, 128] bf16   ∂L/∂(state leaving the chunk), [K, V]
///   dq_part   [T, HV, 128] fp32            dq per value head (GVA only; summed by group_sum)
///   dk_part   [T, HV, 128] fp32            dk per value head (GVA or delta rule)
///   dd        [slots, HV, 64, 128] bf16    dΔ = scale·A^qkᵀ dO + K̄ dS (delta rule)
/// and, for the delta rule, the recompute keeps fwd.t_inv and fwd.delta.
struct MmaBackwardParams {
  MmaForwardParams fwd;
  const bf16* d_o = nullptr;   ///< [T, HV, 128]
  const float* dht = nullptr;  ///< [N, HV, 128, 128] in the state layout, or null (zero)

  bf16* dh = nullptr;
  float* dq_part = nullptr;
  float* dk_part = nullptr;
  bf16* dd = nullptr;

  bf16* dq = nullptr;     ///< [T, H, 128]
  bf16* dk = nullptr;     ///< [T, H, 128]
  bf16* dv = nullptr;     ///< [T, HV, 128]
  float* dg = nullptr;    ///< [T, HV] (scalar gate), [T, HV, 128] (per-channel gate)
  bf16* dbeta = nullptr;  ///< [T, HV] (delta rule only)
  float* dh0 = nullptr;   ///< [N, HV, 128, 128] in the state layout, or null
  /// true: the backward recomputes the forward's pieces first (two launches). false: a training
  /// step's forward already ran with its pieces kept (mma_kept_forward_params on the same kept
  /// workspace, then mma_forward), so A^qk, the gate factors, the states and, under the delta
  /// rule, W, U, T and Δ are in the workspace as it left them, and the backward starts at its dH
  /// scan.
  bool recompute = true;
  /// The delta rule's dH scan (GDN, DeltaNet) at value tile 32 with K·bf16(dS), Qᵀ·bf16(e ⊙ dO)
  /// and Wᵀ·bf16(dΔ) on wgmma (backward version 25, dh_scan_kernel's kWg) instead of mma.sync
  /// (version 24; tile 64, where the wgmma scan spills, always); the same bits in the host
  /// emulation.
  bool scan_wgmma = true;
  BackwardFault fault = BackwardFault::kNone;
};

/// The caller's tensors: fwd's inputs (q, k, v, g, h0, cu_seqlens; o, final_state ignored), dO
/// and dht, and the gradients. q, k, v, dO and dq, dk, dv are bf16.
struct MmaBackwardTensors {
  MmaForwardTensors fwd;
  const void* d_o = nullptr;
  const float* dht = nullptr;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  float* dg = nullptr;
  void* dbeta = nullptr;  ///< bf16, delta rule only
  float* dh0 = nullptr;
};

/// The backward's workspace in two parts. `kept`: what a training step's forward keeps for its
/// backward (the forward's pieces, the states entering every chunk and, under the delta rule, T
/// and Δ; mma_kept_workspace_bytes), written by the recompute or by the forward of
/// mma_kept_forward_params. `scratch`: the backward's own (dh, dΔ, the per-head fp32 dq, dk;
/// mma_backward_scratch_bytes). Two buffers, so that a caller can hold the kept part from the
/// forward to the backward and allocate the scratch in the backward alone.
struct MmaBackwardWorkspace {
  void* kept = nullptr;
  std::size_t kept_bytes = 0;
  void* scratch = nullptr;
  std::size_t scratch_bytes = 0;
  /// MmaBackwardParams::recompute: false when the forward of mma_kept_forward_params ran on
  /// `kept` and the inputs are the same.
  bool recompute = true;
};

/// Bytes of the kept part for `member` at `dims` (K = V = 128; LA, SSD, DeltaNet or GDN). At
/// B1·T8192·H32: 172 MB for LA and SSD, 409 MB for DeltaNet and GDN.
[[nodiscard]] Expected<std::size_t> mma_kept_workspace_bytes(Member member, const gpu::Dims& dims);

/// Bytes of the backward's scratch part.
[[nodiscard]] Expected<std::size_t> mma_backward_scratch_bytes(Member member,
                                                               const gpu::Dims& dims);

/// Bytes of the backward's one-buffer workspace: the kept part, then the scratch.
[[nodiscard]] Expected<std::size_t> mma_backward_workspace_bytes(Member member,
                                                                 const gpu::Dims& dims);

/// The forward block of a training step: mma_forward_params on `t` with the kept part's pieces
/// in `kept` (`bytes` at least mma_kept_workspace_bytes), so that mma_forward writes o and the
/// final state and keeps what the backward reads; then mma_backward with a workspace whose kept
/// part is the same buffer and `recompute = false`.
[[nodiscard]] Expected<MmaForwardParams> mma_kept_forward_params(Member member,
                                                                 const gpu::Dims& dims, float scale,
                                                                 StateLayout layout,
                                                                 const MmaForwardTensors& t,
                                                                 void* kept, std::size_t bytes);

/// The parameter block: the forward's checks, the backward's members, which gradients must be
/// present (dq, dk, dv always; dg exactly with a gate, dbeta exactly with the delta rule; dh0
/// optional), 16-byte alignment, and the workspace layout in its two parts.
[[nodiscard]] Expected<MmaBackwardParams> mma_backward_params(Member member, const gpu::Dims& dims,
                                                              float scale, StateLayout layout,
                                                              const MmaBackwardTensors& t,
                                                              const MmaBackwardWorkspace& ws);

/// The same in one buffer of mma_backward_workspace_bytes: the kept part at its start, the
/// scratch after it; recompute = true.
[[nodiscard]] Expected<MmaBackwardParams> mma_backward_params(Member member, const gpu::Dims& dims,
                                                              float scale, StateLayout layout,
                                                              const MmaBackwardTensors& t,
                                                              void* workspace, std::size_t bytes);

/// The recompute (the forward's two launches, keeping the chunk states), the dH scan, the
/// gradient kernel, the WY kernel (delta rule) and, under GVA or the delta rule, the group sum,
/// on `stream` (chunked_mma_backward.cu).
/// value_tile (32 or 64): the value columns per CTA of the two serial passes. With `times`, each
/// launch is timed with CUDA events (StageTimes) and the call waits for the stream.
[[nodiscard]] Status mma_backward(Member member, const MmaBackwardParams& p, int value_tile,
                                  cudaStream_t stream, StageTimes* times = nullptr);

}  // namespace kcv::glr::dev
