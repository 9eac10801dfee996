// File: glr/dev/chunked_mma_backward.cuh
// The kernels of the tensor-core GLR backward (chunked_mma_backward.hpp), written once over the
// gate kind (none, scalar) and the delta rule, and the launch sequence over a launch policy (CUDA:
// chunked_mma_backward.cu; host emulation: host_runner.cpp).
//
//   versions (one line each; the references beside it: glr/reference/chunk_backward.cpp and the
//   CUDA-core stages glr/kernels/stage_{dh_scan,kgrads,vgrads}.cuh)
//   1  recompute by the forward with the chunk states kept in bf16; reverse dH scan (fp32 carry,
//      mma.sync); one chunk-parallel gradient kernel (mma.sync); GVA group sum.
//   2  the delta rule: the recompute also keeps bf16 T and Δ; the scan forms dΔ and subtracts
//      Wᵀ dΔ; wy_grad_kernel for the WY and triangular-inverse VJPs, dβ and GDN's − Σ v·dv.
//   3  wy_grad_kernel's tiles share space across its phases and its row partials sit in
//      registers: 111.75 KB of shared memory (174.75 before), two CTAs per multiprocessor.
//   4  grad_kernel's dg (scalar gate): S_e arrives by cp.async with the chunk's other tiles and
//      ⟨S_e, dS⟩ is read from shared memory (dot_part), where each thread read S_e and, a second
//      time, dS from global memory in a rolled loop of 16-byte loads; the row partials q·dq − k·dk
//      in registers (RowPartials), where each pair was a read-modify-write of shared memory. The
//      same sums in the same order; 190.25 KB of shared memory (156.25 before).
//   5  dh_scan_kernel without the delta rule at 16 value columns where the forward takes 32
//      (scan_value_tile): twice the CTAs, two per multiprocessor, each step half the columns.
//   6  dh_scan_kernel under the delta rule at 16 and 32 value columns where the forward takes 32
//      and 64: K, W and A^qk one copy each (96 and 108 KB, two CTAs per multiprocessor; 151 and
//      175 KB with two stages before), each warp refilling the part only it reads right after its
//      own last read, with no CTA barrier. The same sums in the same order.
//   7  dh_scan_kernel's copies with compile-time trip counts (copy_rows_async_fixed,
//      copy_block_async, copy_floats_async_fixed): one address product per copy and an add per
//      16-byte piece, where a rolled loop to blockDim.x divided and multiplied in 64 bits per
//      piece; y = bf16(e ⊙ dO) in 16-byte pieces. The same sums in the same order.
//   8  wy_grad_kernel: grad_kernel's fp32 dk part loaded all at once before dk's stores (8-byte
//      loads), where each pair's load waited for the store before it (one global round trip per
//      pair, 32 a thread); dg read at the start beside β (sm.dg); copies with compile-time trip
//      counts; X, Ṽ rebuilt in 16-byte pieces. The same sums in the same order; 112 KB.
//   9  grad_kernel's dg for SSD as the chunked reference forms it (inter_chunk_grads,
//      decayed_gram_vjp): dP's tile without its diagonal (dp_diag, added to dq and dk after the
//      row terms), no − k·dk on the last row, and e_last·⟨H, dS⟩ + Σ_{s<last} k_s·(r ⊙ V dSᵀ)_s
//      in place of ⟨S_e, dS⟩ (S_e not loaded): the pairs that cancel exactly are left out, so a
//      NaN in v at a chunk's last row leaves dg finite where the recurrence does (EXC-01).
//      157.5 KB of shared memory for SSD (GDN keeps S_e: 190.25 KB).
//   10 grad_kernel's copies with compile-time trip counts (copy_rows_async_fixed), where a rolled
//      loop to blockDim.x formed a 64-bit product per 16-byte piece (84 pieces a thread with the
//      scalar gate and the delta rule); dg's two serial sums (the suffix sums of the row terms
//      and ⟨S_e, dS⟩ over the 128 parts) by two threads of two warps at once, and dg stored by
//      each row's thread, where one thread ran both sums in turn and stored every row. The same
//      sums in the same order.
//   11 dh_scan_kernel under the delta rule at the forward's tile in 16 warps (kScanGroups: 8 value
//      columns a warp at tile 32), K, W and A^qk back in the two stages with Q and dO, CTA-wide
//      (151 and 175 KB, one CTA per multiprocessor, where 4 warps took 16 or 32 columns each and
//      refilled their own parts). The same sums in the same order.
//   12 the serial sums over rows (grad_kernel's dg, wy_grad_kernel's − Σ v·dv) read one value a
//      row, each row's partials folded first by that row's thread (fold_row_partials), where one
//      thread summed sixteen partials a row in a chain of dependent adds; wy_channel_kernel (KDA)
//      adds dg's suffix sums from every thread, each thread's loads issued before its adds, where
//      thread d made 64 dependent read-modify-writes of global memory; the per-channel gate and
//      the diagonal blocks' per-pair sums as the forward's version 7. The same sums in the same
//      order.
//   13 wy_channel_kernel (KDA): the Gram VJP's diagonal blocks of both sides in one pass
//      (gram_vjp_diagonal), a thread per (row block, channel) forming each e^{G_i − G_j} once for
//      the row side's and the column side's term, where each side formed it per element of the
//      warps' fragments with half the lanes idle at each pair (four exponentials per pair and
//      channel issued, now one); the sides' off-diagonal sums wait in two fp32 tiles (221.75 KB of
//      shared memory, 189.75 before). grad_channel_kernel (GLA, KDA) the same for dq's row side
//      and dk's column side, dq's tile beside the anchored operands, the row terms then in it
//      (214.5 KB, 206 before). The same sums in the same order.
//   14 wy_grad_kernel: the warps with no block of dT (group > row block, 6 of 16) form K Kᵀ's ten
//      blocks for dβ during phase 3, where the ten busy warps of phase 5 formed one each after
//      their dL products (phase 5's longest warp: 24 products, now 8); fp32 in a tile of their
//      own (130 KB of shared memory, 112 before; 93 registers for GDN). The same bits.
//   15 every exponential as the forward's version 9 (arch::exp_approx); grad_channel_kernel's
//      copies in two groups, Q and K (first read in phase B) landing while phase A computes.
//   16 grad_kernel's copies in two groups: Q and S_e (GDN), first read after dP's barrier, land
//      while dv, dP and the inter-chunk terms compute. The same bits.
//   17 wy_channel_kernel (KDA) reads P's diagonal blocks from the workspace (gram_diag, the
//      prepare kernel's per-pair sums, kept with T and Δ: 4 KB per chunk and head), where it
//      summed the 480 pairs j < i over 128 channels again. The same bits.
//   18 grad_channel_kernel's ⟨H_d, dS_d⟩ (thread d, row d in column order) reads eight columns
//      of H and dS per 16-byte load, where it read one bf16 of each per load. The same bits.
//   19 wy_grad_kernel: β, dg and the gates loaded by each row's thread before it stores any of
//      them, where each load waited for the store before it (three global round trips before the
//      first barrier, the phase that held 33.7 % of GDN's samples at `324d13d`); grad_kernel's
//      fp32 dk part copied with the operands (cp.async, its own group) and read by wy_finish_dk
//      from shared memory, where its global load was waited for at the end (19.6 %). 164 KB of
//      shared memory (130 before). The same bits.
//   20 grad_kernel's and grad_channel_kernel's fp32 parts (dq_part under GVA, dk_part under GVA
//      or the delta rule) stored a pair per 8-byte store (arch::store_f32x2), where each pair was
//      two 4-byte stores (st.global.f32 twice in the PTX); the store phase of GDN's grad_kernel
//      held 41.7 % of its samples at `5ad6282`, "long scoreboard" 46 % of it. The same bits.
//   21 dh_scan_kernel's copies issued by a copy warp of its own (kScanCopyWarps; not KDA's, whose
//      registers would not fit) beside the compute warps, which meet it at each step's first
//      barrier and synchronise among themselves at a named barrier, as the forward's state pass
//      (its version 12): the compute warps' address arithmetic after their own LDGSTS waited for
//      the copies to read their registers. The same bits.
//   22 grad_kernel and grad_channel_kernel copy A^qk only without the delta rule, where dv reads
//      it (with it, the scan's dΔ holds A^qk's term): 8 KB less per chunk and head. The same
//      bits.
//   23 the stores of a warp's accumulator tiles (dq, dk and their fp32 parts, dv, wy_finish_dk)
//      through store_rows: two row addresses a lane, formed once, and each pair a constant offset
//      from one, where each pair's address was a 64-bit product of its row and the stride (in
//      GDN's grad_kernel the products between its stores went from 23 mul.wide to 4 in the PTX;
//      its store phase's hottest instructions were those products waiting on the registers of
//      the stores before them, ncu_phases_gdn.md at `920a8c0`). The same bits.
//   24 the copies in the order of first use: wy_grad_kernel and wy_channel_kernel copy dΔ and H
//      (dW's operands) as a group of their own and form dW while T, V and K arrive (dṼ moves after
//      barrier A, which now also waits for them); grad_kernel with the delta rule copies K with Q
//      (first read after dP's barrier). Each kernel's first phase held 28–34 % of its samples, a
//      CTA waiting for its own loads (ncu_phases_gdn.md). The WY kernels' dv stores through
//      store_rows too (β folded into the tile after dβ's partials take it unscaled). The
//      emulation lands a cp.async group only at the wait that retires it, so a tile read before
//      its wait fails the tests. The same bits.
//   25 the delta rule's dH scan (GDN, DeltaNet) at value tile 32 with K·bf16(dS), Qᵀ·bf16(e ⊙ dO)
//      and Wᵀ·bf16(dΔ) as wgmma products (kWg, MmaBackwardParams::scan_wgmma), as the forward's
//      version 13, and four copy warps (one held the compute warps at the step's barrier: 39 % of
//      GDN's dh_scan samples on one H100 at `5a14302`). The same bits.
//
// 0. The forward's prepare_kernel and state_output_kernel without the output (o not written: no Q
//    or A^qk loaded, no Q·H or A^qk·Δ) keep bf16(H) of every chunk entry and of every sequence end
//    (MmaForwardParams::states): the same bf16 values the forward multiplies with.
// 1. dh_scan_kernel, one CTA per (sequence, value head, kBV value columns: scan_value_tile, 16 at
//    the forward's narrow tile without the delta rule, else the forward's tile), 4 compute warps,
//    or 16 under the delta rule (kScanGroups), and a copy warp, serial over the chunks from the
//    last: dS (∂L/∂ state
//    leaving the chunk) in fp32 registers, warp w + 4h rows 32w..32w+31 and the column group h,
//    starting from dht; per chunk
//      dh[slot] = bf16(dS)
//      dS ← e_last·dS + scale·Qᵀ·bf16(e ⊙ dO)              (B2 without the delta rule)
//    and dh0 = dS at the end. e ⊙ dO is Q̄ᵀdO's row factor moved onto dO (a rounding of the
//    same size row by row, as the forward's r ⊙ Δ).
// 2. grad_kernel, one CTA (16 warps, kGradGroups column groups) per (chunk slot, value head),
//    chunk-parallel; warp w + 4h rows 16w..16w+15 of the chunk (feature columns of group h); H =
//    bf16 state entering the chunk, dS = dh[slot]:
//      dv = scale·A^qkᵀ·dO + r ⊙ (K·dS)                         (A^qk from the forward, bf16)
//      dP = bf16(scale·Γ ⊙ Tril_incl(dO·Vᵀ))                     (the decayed Gram's VJP)
//      dq = scale·e ⊙ (dO·Hᵀ) + dP·K;   dk = r ⊙ (V·dSᵀ) + dPᵀ·Q
//      dg_t = Σ_{s=t..last} (q_s·dq_s − k_s·dk_s) + ⟨S_e, dS⟩     (scalar gate; S_e the bf16
//             state leaving the chunk; the gauge identity of precision-contract.md §2.3)
//    q·dq and k·dk are taken from the fp32 accumulators before dq, dk are rounded. SSD sums the
//    same identity without the pairs that cancel exactly (as glr/reference/chunk_backward.cpp):
//      dg_t = Σ_{s=t..last} q_s·dq'_s − Σ_{s=t..last−1} k_s·dk'_s
//             + e_last·⟨H, dS⟩ + Σ_{s<last} k_s·(r ⊙ (V dSᵀ))_s
//    where dq', dk' are dq, dk without dP's diagonal (dP_ii q_i·k_i enters q_i·dq_i and
//    k_i·dk_i alike), and the last row's k·dk is left out (its inter-chunk term is the last key's
//    part of ⟨S_e, dS⟩, its intra-chunk term the diagonal alone).
//    With the delta rule (docs/glr/tensor-core-backward.md, "The delta rule"): the scan also forms
//      dΔ = scale·A^qkᵀ·dO + r ⊙ (K·bf16(dS)) → dd (bf16), dS ← … − Wᵀ·bf16(dΔ)
//    and grad_kernel reads Δ where V stands above and leaves dv to wy_grad_kernel, which forms
//    dW, dṼ, dX, dT, dL (bf16 operands, fp32 accumulation), dv, dk's WY part and dβ.
// 3. group_sum_kernel (GVA only): dq, dk summed over the value heads of a q/k head in head order
//    from fp32 parts. Without GVA grad_kernel stores dq, and dk (wy_grad_kernel under the delta
//    rule, from the fp32 sum of both parts), as bf16 itself.
// Deterministic: every output and workspace element has one owner and a fixed summation order;
// no atomics. The state gradient never stays in a tensor-core accumulator across chunks.
#pragma once

#include <cstdint>
#include <type_traits>

#include "glr/dev/chunked_mma_backward.hpp"
#include "glr/dev/chunked_mma_backward_channel.cuh"
#include "glr/dev/chunked_mma_forward.cuh"
#include "glr/dev/chunked_mma_wy_channel.cuh"
#include "glr/dev/wy_phases.cuh"

namespace kcv::glr::dev {

using gpu::detail::copy_block_async;
using gpu::detail::copy_float_rows_async_fixed;
using gpu::detail::dot_part;
using gpu::detail::RowPartials;

// ------------------------------------------------------------------------------ 1. dH scan

/// The dH scan's column groups: under the delta rule warp w + 4h takes rows 32w.. of dS (16w.. of
/// dΔ) and the value columns kBV/kScanGroups·h.. of its CTA's tile, 16 warps whose steps each
/// carry a quarter of the columns (a step's time grows with a warp's columns: the run records of
/// tensor-core-backward.md); without it one group. Every element keeps its sum order.
template <bool kDelta>
inline constexpr int kScanGroups = kDelta ? 4 : 1;
template <bool kDelta>
inline constexpr int kScanComputeThreads = kMmaThreads* kScanGroups<kDelta>;
/// The dH scan's copy warps, after its compute warps: they alone issue the cp.async copies of the
/// next chunk's operands, as the state pass's copy warps do (kStateCopyWarps). Under the delta
/// rule four: one copy warp issued all of Q, dO, K, W and A^qk (115 LDGSTS a lane a step), and
/// the compute warps waited for it at the step's barrier (39 % of GDN's dh_scan samples on one
/// H100, docs/glr/ncu_phases_gdn.md). A CTA of 17 to 20 warps puts 5 on one of the
/// multiprocessor's four register files, 96 registers a thread at most, which GDN's and
/// DeltaNet's scans keep to (89); KDA's scan (per-channel gate and delta rule) spills there, so
/// its compute warps issue the copies themselves (no copy warp). Without the delta rule one.
template <GateKind kGate, bool kDelta>
inline constexpr int kScanCopyWarps = kGate == GateKind::kChannel&& kDelta ? 0
                                      : kDelta                             ? 4
                                                                           : 1;
template <GateKind kGate, bool kDelta>
inline constexpr int kScanThreads =
    kScanComputeThreads<kDelta> + 32 * kScanCopyWarps<kGate, kDelta>;

/// The operands of one chunk step, filled by cp.async one chunk ahead, CTA-wide: Q (a per-channel
/// gate: Q̄), dO's columns and the factors; with the delta rule K (K̄), W and A^qk (its column
/// blocks at and below the diagonal; the blocks above are never read). kWg: Q, K and W in wgmma's
/// swizzled tiles.
template <int kBV, bool kWg>
struct ScanOperands {
  StateATile<kWg> q;             ///< Q (a per-channel gate: Q̄, the kept part's)
  SmemBf16<kMmaChunk, kBV> d_o;  ///< dO's columns col0..col0+kBV
  /// exp(G), exp(G_last − G), 0 past the end; a per-channel gate: e_last of channel d at d.
  float f[2][kMmaChunk];
};
template <bool kWg>
struct ScanDeltaOperands {
  StateATile<kWg> k, w;
  SmemBf16<kMmaChunk, kMmaChunk> a;
};
struct NoScanDeltaOperands {};
template <int kBV, bool kDelta, bool kWg>
struct ScanStage : ScanOperands<kBV, kWg>,
                   std::conditional_t<kDelta, ScanDeltaOperands<kWg>, NoScanDeltaOperands> {};

template <int kBV, bool kWg>
struct ScanDeltaTiles {
  StateHTile<kBV, kWg> ds;       ///< bf16(dS), the values written to dh
  StateDeltaRTile<kBV, kWg> dd;  ///< bf16(dΔ)
};
struct NoScanDeltaTiles {};
template <int kBV, bool kDelta, bool kWg>
struct ScanStorage : std::conditional_t<kDelta, ScanDeltaTiles<kBV, kWg>, NoScanDeltaTiles> {
  ScanStage<kBV, kDelta, kWg> stage[2];
  StateDeltaRTile<kBV, kWg> y;  ///< bf16(e ⊙ dO)
};
static_assert(sizeof(ScanOperands<16, false>) % 16 == 0 &&
                  sizeof(ScanOperands<32, false>) % 16 == 0 &&
                  sizeof(ScanOperands<64, false>) % 16 == 0 &&
                  sizeof(ScanDeltaOperands<false>) % 16 == 0 &&
                  sizeof(ScanDeltaTiles<32, false>) % 16 == 0 &&
                  sizeof(ScanDeltaTiles<64, false>) % 16 == 0,
              "ScanStorage: every tile must start 16-byte aligned");
static_assert(sizeof(ScanStorage<64, true, false>) <= 227 * 1024 &&
                  sizeof(ScanStorage<64, true, true>) <= 227 * 1024,
              "ScanStorage: over the sm_90 limit");
static_assert(2 * (sizeof(ScanStorage<16, false, false>) + 1024) <= 228 * 1024,
              "ScanStorage<16, false>: two CTAs per multiprocessor");

/// Value columns per CTA of the dH scan at the forward's tile kBV. Without the delta rule the
/// forward's narrow tile is halved: 16 columns, N·HV·8 CTAs of 4 warps, two per multiprocessor
/// (44 KB of shared memory each), where the forward's rule put N·HV·4 on at most one each; a
/// step's time grows with its columns while Q, the larger load, is the same at any tile. Under
/// the delta rule the forward's tile, in 16 warps (kScanGroups): K, W and A^qk, loaded by every
/// CTA of a head, are each step's larger loads, so the columns go to more warps of one CTA rather
/// than to more CTAs. The columns of dS are independent, so dh, dΔ and dh0 are the same bits at
/// any tile.
template <bool kDelta>
constexpr int scan_value_tile(int kBV) {
  return !kDelta && kBV == 32 ? 16 : kBV;
}

/// kWg (the delta rule without a per-channel gate only): K·bf16(dS), Qᵀ·bf16(e ⊙ dO) and
/// Wᵀ·bf16(dΔ) as wgmma products of the column group's warpgroup over swizzled tiles, each
/// element's sum in mma_acc's order; A^qkᵀ·dO stays on mma.sync (mma_acc_triangular). Warp w's
/// rows of dS are then 16w … and 64 + 16w … (the two 64-row halves of Qᵀ·y and Wᵀ·dΔ).
template <GateKind kGate, bool kDelta, int kBV, bool kWg = false>
__global__ void __launch_bounds__(kScanThreads<kGate, kDelta>, 1)
    dh_scan_kernel(MmaBackwardParams bp) {
  static_assert(kBV == 16 || kBV == 32 || kBV == 64,
                "dh_scan_kernel: 16, 32 or 64 value columns per CTA");
  static_assert(!kWg || (kDelta && kGate != GateKind::kChannel),
                "dh_scan_kernel: the wgmma scan is the delta rule's without a per-channel gate");
  constexpr int kThreads = kScanComputeThreads<kDelta>;
  constexpr int kCols = kBV / kScanGroups<kDelta>;
  const MmaForwardParams& p = bp.fwd;
  ScanStorage<kBV, kDelta, kWg>& sm = arch::shared_storage<ScanStorage<kBV, kDelta, kWg>>();
  constexpr int kTiles = kMmaDim / kBV;
  const std::int64_t b = blockIdx.x;
  const int col0 = static_cast<int>(b % kTiles) * kBV;
  const int hv = static_cast<int>((b / kTiles) % p.v_heads);
  const std::int64_t n = b / kTiles / p.v_heads;
  const std::int64_t bos = seq_begin(p, n);
  const std::int64_t eos = seq_begin(p, n + 1);
  const std::int64_t chunks = (eos - bos + kMmaChunk - 1) / kMmaChunk;
  const std::int64_t slot0 = slot_base(p, n);
  const std::int64_t qk_stride = static_cast<std::int64_t>(p.qk_heads) * kMmaDim;
  const std::int64_t v_stride = static_cast<std::int64_t>(p.v_heads) * kMmaDim;
  const int w = arch::warp_id() % 4;             // this warp's row block
  const int d0 = 32 * w;                         // its rows of dS
  const int r0 = 16 * w;                         // its rows of a chunk (dΔ)
  const int cw = kCols * (arch::warp_id() / 4);  // its columns of the tile: cw..cw+kCols
  constexpr bool kChannel = kGate == GateKind::kChannel;

  const auto rows_of = [&](std::int64_t j) {
    const std::int64_t left = eos - bos - j * kMmaChunk;
    return static_cast<int>(left < kMmaChunk ? left : kMmaChunk);
  };
  // Chunk j's operands into stage j % 2, one group, by the copy warp (after the compute warps),
  // or by the compute warps where the kernel has none.
  constexpr bool kCopyWarp = kScanCopyWarps < kGate, kDelta >> 0;
  const auto issue = [&](std::int64_t j) {
    ScanStage<kBV, kDelta, kWg>& st = sm.stage[j % 2];
    const std::int64_t t0 = bos + j * kMmaChunk;
    const std::int64_t slot = slot0 + j;
    const int c = rows_of(j);
    constexpr int kT = kCopyWarp ? 32 * kScanCopyWarps<kGate, kDelta> : kThreads;
    constexpr int kW = kCopyWarp ? kThreads / 32 : 0;  // the first copying warp
    if constexpr (kChannel)                            // Q̄ = bf16(Q ⊙ E), the prepare kernel's
      copy_rows_async_fixed<kT, kW>(st.q, p.qbar + slot_block(p, slot, hv, kMmaDim), kMmaDim, c);
    else
      copy_rows_async_fixed<kT, kW>(st.q, p.q + qk_row(p, t0, hv), qk_stride, c);
    copy_rows_async_fixed<kT, kW>(st.d_o, bp.d_o + v_row(p, t0, hv) + col0, v_stride, c);
    copy_floats_async_fixed<kT, 2 * kMmaChunk, kW>(&st.f[0][0],
                                                   p.factors + slot_block(p, slot, hv, 2));
    if constexpr (kDelta) {
      if constexpr (kChannel)  // K̄ = bf16(K ⊙ R), the prepare kernel's
        copy_rows_async_fixed<kT, kW>(st.k, p.kbar + slot_block(p, slot, hv, kMmaDim), kMmaDim, c);
      else
        copy_rows_async_fixed<kT, kW>(st.k, p.k + qk_row(p, t0, hv), qk_stride, c);
      copy_rows_async_fixed<kT, kW>(st.w, p.w + slot_block(p, slot, hv, kMmaDim), kMmaDim,
                                    kMmaChunk);
      const bf16* a = p.a + slot_block(p, slot, hv, kMmaChunk);
      if constexpr (kCopyWarp) {  // A^qk's column block b, rows 16b..63, by copy warp b mod n
        for (int b = arch::warp_id() - kThreads / 32; b < kMmaChunk / 16;
             b += kScanCopyWarps<kGate, kDelta>)
          copy_block_async<kMmaChunk, 16>(st.a, a, kMmaChunk, 16 * b, kMmaChunk - 16 * b, 16 * b,
                                          kMmaChunk);
      } else if (arch::warp_id() < 4) {  // A^qk's column block w, rows 16w..63
        copy_block_async<kMmaChunk, 16>(st.a, a, kMmaChunk, r0, kMmaChunk - r0, r0, kMmaChunk);
      }
    }
    arch::cp_async_commit();
  };
  // The copy warp: chunk j − 1's copies while the compute warps work on chunk j; each step's
  // first barrier (all warps) is where chunk j has landed and chunk j + 1's stage is free.
  if (kCopyWarp && arch::warp_id() >= kThreads / 32) {
    if (chunks > 0) issue(chunks - 1);
    for (std::int64_t j = chunks - 1; j >= 0; --j) {
      arch::cp_async_wait<0>();
      if constexpr (kWg) arch::fence_proxy_async_shared();  // for wgmma's reads of Q, K, W
      __syncthreads();  // chunk j has landed; every compute warp is done with chunk j + 1
      if (j > 0) issue(j - 1);
    }
    return;
  }

  // y = bf16(e ⊙ dO), CTA-wide in 16-byte pieces: thread t the pieces t, t + kThreads, … (rows
  // kThreads/(kBV/8) apart; threads past the last piece none), eight products and one 16-byte
  // load and store each.
  const auto form_y = [&](const ScanStage<kBV, kDelta, kWg>& st) {
    constexpr int kPieces = kBV / 8;
    constexpr int kRowStep = kThreads / kPieces;
    constexpr int kSteps = kMmaChunk >= kRowStep ? kMmaChunk / kRowStep : 1;
    arch::for_each_lane([&](int lane, int) {
      const int t = arch::warp_id() * arch::kWarpSize + lane;
      const int i0 = t / kPieces;
      const int e = 8 * (t % kPieces);
      if (i0 >= kMmaChunk) return;
      KCV_GLR_UNROLL
      for (int k = 0; k < kSteps; ++k) {
        const int i = i0 + k * kRowStep;
        const float f = st.f[0][i];
        std::uint32_t x[4], out[4];
        arch::load_u32x4(st.d_o.ptr(i, e), x);
        KCV_GLR_UNROLL
        for (int h = 0; h < 4; ++h)
          out[h] =
              arch::pack_bf16x2(f * arch::unpack_bf16(x[h], 0), f * arch::unpack_bf16(x[h], 1));
        arch::store_u32x4(sm.y.ptr(i, e), out);
      }
    });
  };

  AccTile<32, kCols> ds;  // fp32 dS rows hrow(0..31), columns col0+cw..col0+cw+kCols
  const auto hrow = [&](int r) { return state_row<kWg>(w, r); };  // dS's row of tile row r
  for_each_pair(ds, [&](int r, int e, float& x0, float& x1) {
    x0 = bp.dht != nullptr ? bp.dht[user_state(p, n, hv, hrow(r), col0 + cw + e)] : 0.0f;
    x1 = bp.dht != nullptr ? bp.dht[user_state(p, n, hv, hrow(r), col0 + cw + e + 1)] : 0.0f;
  });
  const std::int64_t next_col = p.state_kv ? 1 : kMmaDim;  // user_state(.., e + 1) − (.., e)
  if (!kCopyWarp && chunks > 0) issue(chunks - 1);

  for (std::int64_t j = chunks - 1; j >= 0; --j) {
    bf16* dh = bp.dh + state_block(p, slot0 + j, hv) + col0 + cw;
    for_each_pair(ds, [&](int r, int e, float& x0, float& x1) {
      const std::uint32_t bits = arch::pack_bf16x2(x0, x1);
      arch::store_u32(dh + hrow(r) * kMmaDim + e, bits);
      if constexpr (kDelta) arch::store_u32(sm.ds.ptr(hrow(r), cw + e), bits);
    });
    if constexpr (kWg) arch::fence_proxy_async_shared();  // bf16(dS) for K·bf16(dS)
    if constexpr (!kCopyWarp) arch::cp_async_wait<0>();
    __syncthreads();  // chunk j and bf16(dS) have landed; every warp is done with chunk j + 1
    if (!kCopyWarp && j > 0) issue(j - 1);
    const ScanStage<kBV, kDelta, kWg>& st = sm.stage[j % 2];
    if constexpr (kDelta) {
      // dΔ = scale·A^qkᵀ dO (k-steps w..3: A^qk is lower triangular) + r ⊙ (K·bf16(dS)); K·dS,
      // the step's serial path, first, so that y and A^qkᵀ dO are issued while it runs.
      AccTile<16, kCols> local, carried;
      zero(local);
      if constexpr (kWg) {
        wgmma_product<arch::Major::kK>(carried.f[0], st.k, 0, sm.ds, cw, kMmaDim / 16);
      } else {
        zero(carried);
        mma_acc<AStore::kRowMajor, BStore::kKMajor>(carried, st.k, r0, sm.ds, cw, 0, kMmaDim / 16);
      }
      if constexpr (!kChannel) form_y(st);
      mma_acc_triangular<Triangle::kUpper, AStore::kTransposed, BStore::kKMajor>(
          local, st.a, r0, st.d_o, cw, w, kMmaChunk / 16);
      bf16* dd = bp.dd + slot_block(p, slot0 + j, hv, kMmaDim) + col0 + cw;
      if constexpr (!kChannel)  // (K̄ holds a per-channel gate's R)
        for_each_pair(carried, [&](int il, int, float& x0, float& x1) {
          x0 *= st.f[1][r0 + il];
          x1 *= st.f[1][r0 + il];
        });
      zip(local, carried, [&](float& x, float y) { x = p.scale * x + y; });
      for_each_pair(local, [&](int il, int e, float& x0, float& x1) {
        const int i = r0 + il;
        const std::uint32_t bits = arch::pack_bf16x2(x0, x1);
        arch::store_u32(sm.dd.ptr(i, cw + e), bits);
        arch::store_u32(dd + i * kMmaDim + e, bits);
      });
    } else if constexpr (!kChannel) {
      form_y(st);
    }
    if constexpr (kWg) arch::fence_proxy_async_shared();  // y and bf16(dΔ) for wgmma
    arch::named_barrier_sync(1, kThreads);  // y (and dΔ) complete (the compute warps)
    AccTile<32, kCols> s;
    if constexpr (kWg) {  // dS's rows 0–63, then 64–127
      wgmma_product<arch::Major::kMN>(s.f[0], st.q, 0, sm.y, cw, kMmaChunk / 16);
      wgmma_product<arch::Major::kMN>(s.f[1], st.q, 64, sm.y, cw, kMmaChunk / 16);
    } else {
      zero(s);
      if constexpr (kChannel)  // Q̄ᵀ dO: the row factors are inside Q̄
        mma_acc<AStore::kTransposed, BStore::kKMajor>(s, st.q, d0, st.d_o, cw, 0, kMmaChunk / 16);
      else
        mma_acc<AStore::kTransposed, BStore::kKMajor>(s, st.q, d0, sm.y, cw, 0, kMmaChunk / 16);
    }
    const bool decays = bp.fault != BackwardFault::kScanWithoutDecay;
    const float e_last = decays ? st.f[0][rows_of(j) - 1] : 1.0f;
    // dS_entry = e_last·dS + scale·Qᵀ·y (a per-channel gate: Diag(e_last) dS + scale·Q̄ᵀ dO),
    // − Wᵀ·bf16(dΔ) with the delta rule.
    AccTile<32, kCols> sw;
    if constexpr (kWg) {
      wgmma_product<arch::Major::kMN>(sw.f[0], st.w, 0, sm.dd, cw, kMmaChunk / 16);
      wgmma_product<arch::Major::kMN>(sw.f[1], st.w, 64, sm.dd, cw, kMmaChunk / 16);
    } else if constexpr (kDelta) {
      zero(sw);
      mma_acc<AStore::kTransposed, BStore::kKMajor>(sw, st.w, d0, sm.dd, cw, 0, kMmaChunk / 16);
    }
    if constexpr (kChannel) {
      for_each_pair(ds, s, [&](int r, int, float& x0, float& x1, float& y0, float& y1) {
        const int d = hrow(r);  // e_last,d in the factors' 128 floats
        const float f = decays ? st.f[d / kMmaChunk][d % kMmaChunk] : 1.0f;
        x0 = f * x0 + p.scale * y0;
        x1 = f * x1 + p.scale * y1;
      });
    } else {
      zip(ds, s, [&](float& x, float y) { x = e_last * x + p.scale * y; });
    }
    if constexpr (kDelta)
      if (bp.fault != BackwardFault::kScanWithoutW) zip(ds, sw, [](float& x, float y) { x -= y; });
    if (bp.fault == BackwardFault::kCarryInBf16)
      zip(ds, s, [](float& x, float) { x = __bfloat162float(__float2bfloat16_rn(x)); });
  }
  if (bp.dh0 != nullptr)  // (one index per pair: two user_state calls put ds on the stack)
    for_each_pair(ds, [&](int r, int e, float& x0, float& x1) {
      const std::int64_t at = user_state(p, n, hv, hrow(r), col0 + cw + e);
      bp.dh0[at] = x0;
      bp.dh0[at + next_col] = x1;
    });
}

// ------------------------------------------------------------------------------ 2. gradients

struct GradStorage {
  SmemBf16<kMmaChunk, kMmaDim> q, k, d_o;
  SmemBf16<kMmaChunk, kMmaDim> v;             ///< V, or Δ with the delta rule
  SmemBf16<kMmaDim, kMmaDim> h;               ///< bf16 state entering the chunk
  SmemBf16<kMmaDim, kMmaDim> ds;              ///< bf16 ∂L/∂(state leaving the chunk)
  SmemBf16<kMmaChunk, kMmaChunk> a;           ///< A^qk (bf16, from the forward; no delta rule)
  SmemBf16<kMmaChunk, kMmaChunk> dp;          ///< bf16(scale·Γ ⊙ Tril_incl(dO Vᵀ))
  float g[kMmaChunk];                         ///< G
  float e[kMmaChunk];                         ///< exp(G)
  float r[kMmaChunk];                         ///< exp(G_last − G)
  float row_part[kGradGroups][kMmaChunk][4];  ///< q·dq − k·dk, per group and lane of a quad
  float bound_part[kMmaThreads];              ///< ⟨S_e, dS⟩, one partial per thread
};
/// GDN's grad_kernel also holds S_e, the bf16 state leaving the chunk (dg's boundary term
/// ⟨S_e, dS⟩ is read from shared memory, copied with the chunk's other tiles).
struct GradGateStorage : GradStorage {
  SmemBf16<kMmaDim, kMmaDim> s_end;
};
/// SSD's grad_kernel forms dg as the chunked reference does (no S_e): it also holds dP's diagonal,
/// which the tile leaves out, and the row partials of k·dk's inter-chunk term.
struct GradSsdStorage : GradStorage {
  float dp_diag[kMmaChunk];  ///< dP_ii (bf16 values), added to dq and dk after dg's row terms
  float key_part[kGradGroups][kMmaChunk][4];  ///< k·(r ⊙ (V dSᵀ)), per group and lane of a quad
};
template <GateKind kGate, bool kDelta>
using GradStorageOf =
    std::conditional_t<kGate != GateKind::kScalar, GradStorage,
                       std::conditional_t<kDelta, GradGateStorage, GradSsdStorage>>;
static_assert(sizeof(GradStorage) % 16 == 0, "GradGateStorage: S_e must start 16-byte aligned");
static_assert(sizeof(GradGateStorage) <= 227 * 1024, "GradGateStorage: over the sm_90 limit");

/// The row sum of one quad's partials of each group, the groups in order.
__device__ __forceinline__ float group_row_sum(const float (&part)[kGradGroups][kMmaChunk][4],
                                               int i) {
  float sum = 0.0f;
  for (int h = 0; h < kGradGroups; ++h)
    sum += ((part[h][i][0] + part[h][i][1]) + part[h][i][2]) + part[h][i][3];
  return sum;
}

/// part[0][i][0] = group_row_sum(part, i) for the rows i < c, each row by its own thread, so that
/// the serial sums over rows that follow (one thread's, in row order) read one value a row where
/// they summed sixteen partials a row in a chain of dependent adds. No barrier inside.
__device__ __forceinline__ void fold_row_partials(float (&part)[kGradGroups][kMmaChunk][4], int c) {
  arch::cta_for(c, [&](int i) { part[0][i][0] = group_row_sum(part, i); });
}

/// The gradient kernel of the scalar gates (LA, SSD, DeltaNet, GDN); grid (chunk slots, value
/// heads), kGradThreads threads in kGradGroups column groups (chunked_mma_backward.hpp).
template <GateKind kGate, bool kDelta>
__global__ void __launch_bounds__(kGradThreads, 1) grad_kernel(MmaBackwardParams bp) {
  constexpr int kThreads = kGradThreads;
  static_assert(kGate != GateKind::kChannel,
                "grad_kernel: a per-channel gate's is grad_channel_kernel");
  const MmaForwardParams& p = bp.fwd;
  GradStorageOf<kGate, kDelta>& sm = arch::shared_storage<GradStorageOf<kGate, kDelta>>();
  // SSD: dP's tile without its diagonal (dg's terms as glr/reference/chunk_backward.cpp forms them)
  constexpr bool kSsd = kGate == GateKind::kScalar && !kDelta;
  const ChunkRef ch = locate_slot(p, blockIdx.x);
  if (!ch.valid) return;
  const std::int64_t slot = blockIdx.x;
  const int hv = static_cast<int>(blockIdx.y);
  const int c = ch.rows;
  const std::int64_t qk_stride = static_cast<std::int64_t>(p.qk_heads) * kMmaDim;
  const std::int64_t v_stride = static_cast<std::int64_t>(p.v_heads) * kMmaDim;

  // Two groups of copies: the tiles of the inter-chunk terms and dP first; Q and S_e (and K with
  // the delta rule), first read after dP's barrier, land while those compute (the CTA is alone on
  // its multiprocessor: no other CTA's work hides a wait). Without the delta rule dv's products
  // read K before that barrier.
  if constexpr (!kDelta)
    copy_rows_async_fixed<kThreads>(sm.k, p.k + qk_row(p, ch.t0, hv), qk_stride, c);
  if constexpr (kDelta)  // Δ where the members without the delta rule have V
    copy_rows_async_fixed<kThreads>(sm.v, p.delta + slot_block(p, slot, hv, kMmaDim), kMmaDim,
                                    kMmaChunk);
  else
    copy_rows_async_fixed<kThreads>(sm.v, p.v + v_row(p, ch.t0, hv), v_stride, c);
  copy_rows_async_fixed<kThreads>(sm.d_o, bp.d_o + v_row(p, ch.t0, hv), v_stride, c);
  copy_rows_async_fixed<kThreads>(sm.h, p.states + state_block(p, slot, hv), kMmaDim, kMmaDim);
  copy_rows_async_fixed<kThreads>(sm.ds, bp.dh + state_block(p, slot, hv), kMmaDim, kMmaDim);
  if constexpr (!kDelta)  // A^qk for dv (with the delta rule the scan's dΔ holds its term)
    copy_rows_async_fixed<kThreads>(sm.a, p.a + slot_block(p, slot, hv, kMmaChunk), kMmaChunk,
                                    kMmaChunk);
  arch::cp_async_commit();
  if constexpr (kDelta)
    copy_rows_async_fixed<kThreads>(sm.k, p.k + qk_row(p, ch.t0, hv), qk_stride, c);
  copy_rows_async_fixed<kThreads>(sm.q, p.q + qk_row(p, ch.t0, hv), qk_stride, c);
  if constexpr (kGate == GateKind::kScalar && kDelta) {  // S_e, for dg's boundary term (GDN)
    const std::int64_t end_slot = bp.fault == BackwardFault::kBoundaryAtEntry ? slot
                                  : ch.last                                   ? p.slots + ch.seq
                                                                              : slot + 1;
    copy_rows_async_fixed<kThreads>(sm.s_end, p.states + state_block(p, end_slot, hv), kMmaDim,
                                    kMmaDim);
  }
  arch::cp_async_commit();

  if constexpr (kGate == GateKind::kScalar) {
    chunk_cumulative_gate(sm.g, p, ch.t0, hv, c);  // the prepare kernel's G
  } else {
    arch::cta_for(kMmaChunk, [&](int i) { sm.g[i] = 0.0f; });
  }
  __syncthreads();
  arch::cta_for(kMmaChunk, [&](int i) {
    const bool valid = i < c;
    const bool gated = kGate == GateKind::kScalar;
    sm.e[i] = valid ? (gated ? arch::exp_approx(sm.g[i]) : 1.0f) : 0.0f;
    sm.r[i] = valid ? (gated ? arch::exp_approx(sm.g[c - 1] - sm.g[i]) : 1.0f) : 0.0f;
  });
  arch::cp_async_wait<1>();
  __syncthreads();  // the first group has landed; G, e and r are complete

  const int w = arch::warp_id() % (kMmaChunk / 16);  // row block
  const int group = arch::warp_id() / (kMmaChunk / 16);
  const int c0 = kGroupCols * group;  // the group's first feature column
  const int r0 = 16 * w;
  using GroupAcc = AccTile<16, kGroupCols>;
  // dv = scale·A^qkᵀ dO (k-steps w..3: A^qk is lower triangular) + r ⊙ (K·dS) (with the delta
  // rule this is dΔ, formed by the scan; dv comes from wy_grad_kernel).
  if constexpr (!kDelta) {
    GroupAcc local, carried;
    zero(local);
    zero(carried);
    mma_acc_triangular<Triangle::kUpper, AStore::kTransposed, BStore::kKMajor>(
        local, sm.a, r0, sm.d_o, c0, w, kMmaChunk / 16);
    mma_acc<AStore::kRowMajor, BStore::kKMajor>(carried, sm.k, r0, sm.ds, c0, 0, kMmaDim / 16);
    bf16* dv = bp.dv + v_row(p, ch.t0, hv) + c0;
    for_each_pair(carried, [&](int il, int, float& x0, float& x1) {
      x0 *= sm.r[r0 + il];
      x1 *= sm.r[r0 + il];
    });
    zip(local, carried, [&](float& x, float y) { x = p.scale * x + y; });
    store_rows(local, dv, v_stride, r0, c, StoreBf16Pair{});
  }
  // dP = bf16(scale·Γ ⊙ Tril_incl(dO Vᵀ)), rows r0.., the 16-column blocks pc ≡ group (mod the
  // groups): computed for pc ≤ w, zero above the diagonal and past the end. SSD: the tile holds
  // the strictly lower part and dp_diag the diagonal (dq, dk add it after dg's row terms are
  // taken).
  for (int pc = group; pc < kMmaChunk / 16; pc += kGradGroups) {
    AccTile<16, 16> da;
    zero(da);
    if (pc <= w)
      mma_acc<AStore::kRowMajor, BStore::kNMajor>(da, sm.d_o, r0, sm.v, 16 * pc, 0, kMmaDim / 16);
    const auto decay = [&](int i, int j) {
      if constexpr (kGate == GateKind::kScalar) return arch::exp_approx(sm.g[i] - sm.g[j]);
      return 1.0f;
    };
    for_each_pair(da, [&](int il, int jl, float& x0, float& x1) {
      const int i = r0 + il;
      const int j = 16 * pc + jl;
      const float p0 = j <= i && i < c ? p.scale * x0 * decay(i, j) : 0.0f;
      const float p1 = j + 1 <= i && i < c ? p.scale * x1 * decay(i, j + 1) : 0.0f;
      const std::uint32_t packed = arch::pack_bf16x2(p0, p1);
      if constexpr (kSsd) {
        if (j == i || j + 1 == i) {
          sm.dp_diag[i] = arch::unpack_bf16(packed, j == i ? 0 : 1);
          arch::store_u32(sm.dp.ptr(i, j), packed & (j == i ? 0xffff0000u : 0x0000ffffu));
          return;
        }
      }
      arch::store_u32(sm.dp.ptr(i, j), packed);
    });
  }
  // dq = scale·e ⊙ (dO Hᵀ), dk = r ⊙ (V dSᵀ): the inter-chunk terms.
  GroupAcc dq, dk;
  zero(dq);
  zero(dk);
  mma_acc<AStore::kRowMajor, BStore::kNMajor>(dq, sm.d_o, r0, sm.h, c0, 0, kMmaDim / 16);
  mma_acc<AStore::kRowMajor, BStore::kNMajor>(dk, sm.v, r0, sm.ds, c0, 0, kMmaDim / 16);
  const bool key_decay = bp.fault != BackwardFault::kKeyWithoutDecay;
  for_each_pair(dq, [&](int il, int, float& x0, float& x1) {
    const float f = p.scale * sm.e[r0 + il];
    x0 *= f;
    x1 *= f;
  });
  for_each_pair(dk, [&](int il, int, float& x0, float& x1) {
    const int i = r0 + il;
    const float f = key_decay || i >= c ? sm.r[i] : 1.0f;
    x0 *= f;
    x1 *= f;
  });
  // SSD: k_i·(r ⊙ (V dSᵀ))_i, the inter-chunk term of k·dk, enters dg through the last row (below).
  if constexpr (kSsd) {
    RowPartials key;
    zero(key);
    for_each_pair(dk, [&](int il, int dl, float& x0, float& x1) {
      const int i = r0 + il;
      const int d = c0 + dl;
      add_to_row(key, il, dl, sm.k.at(i, d) * x0 + sm.k.at(i, d + 1) * x1);
    });
    store_partials(key, sm.key_part[group], r0);
  }
  arch::cp_async_wait<0>();
  __syncthreads();  // dP complete; Q and S_e (with the delta rule K) have landed
  // + dP·K (k-steps 0..w) and dPᵀ·Q (k-steps w..3): the intra-chunk terms.
  const int diagonal = bp.fault == BackwardFault::kDropIntraDiagonal ? w : w + 1;
  mma_acc_triangular<Triangle::kLower, AStore::kRowMajor, BStore::kKMajor>(dq, sm.dp, r0, sm.k, c0,
                                                                           0, diagonal);
  mma_acc_triangular<Triangle::kUpper, AStore::kTransposed, BStore::kKMajor>(dk, sm.dp, r0, sm.q,
                                                                             c0, w, kMmaChunk / 16);

  if constexpr (kGate == GateKind::kScalar) {
    // q_i·dq_i − k_i·dk_i (with the delta rule q_i·dq_i here, − v_i·dv_i in wy_grad_kernel): the
    // lane holding columns 2·(l % 4) + 8n adds to its partial of row i in registers, q·dq's pairs
    // in column order, then − k·dk's; stored once, to row_part[group][i][l % 4]. SSD: dq and dk
    // without dP's diagonal, and no − k·dk on the last row (its inter-chunk term cancels the last
    // row's term through G_last exactly, and its intra-chunk term is the diagonal alone).
    RowPartials row;
    zero(row);
    for_each_pair(dq, [&](int il, int dl, float& x0, float& x1) {
      const int i = r0 + il;
      const int d = c0 + dl;
      add_to_row(row, il, dl, sm.q.at(i, d) * x0 + sm.q.at(i, d + 1) * x1);
    });
    if constexpr (!kDelta)
      for_each_pair(dk, [&](int il, int dl, float& x0, float& x1) {
        const int i = r0 + il;
        const int d = c0 + dl;
        if (i != c - 1) add_to_row(row, il, dl, -(sm.k.at(i, d) * x0 + sm.k.at(i, d + 1) * x1));
      });
    store_partials(row, sm.row_part[group], r0);
  }
  if constexpr (kSsd) {  // dP's diagonal: dq_i += dP_ii k_i, dk_i += dP_ii q_i
    for_each_pair(dq, [&](int il, int dl, float& x0, float& x1) {
      const int i = r0 + il;
      x0 += sm.dp_diag[i] * sm.k.at(i, c0 + dl);
      x1 += sm.dp_diag[i] * sm.k.at(i, c0 + dl + 1);
    });
    for_each_pair(dk, [&](int il, int dl, float& x0, float& x1) {
      const int i = r0 + il;
      x0 += sm.dp_diag[i] * sm.q.at(i, c0 + dl);
      x1 += sm.dp_diag[i] * sm.q.at(i, c0 + dl + 1);
    });
  }
  // Without GVA dq is final here, and so is dk without the delta rule: rounded to bf16 and
  // stored. Otherwise the fp32 part goes to the workspace (group_sum sums a group's heads;
  // wy_grad_kernel adds dk's WY part).
  const auto store_bf16 = [&](GroupAcc& acc, bf16* out) {
    store_rows(acc, out, qk_stride, r0, c, StoreBf16Pair{});
  };
  const auto store_part = [&](GroupAcc& acc, float* out) {  // a pair per 8-byte store
    store_rows(acc, out, v_stride, r0, c,
               [](float* at, float x0, float x1) { arch::store_f32x2(at, x0, x1); });
  };
  if (p.group == 1) {
    store_bf16(dq, bp.dq + qk_row(p, ch.t0, hv) + c0);
  } else {
    store_part(dq, bp.dq_part + v_row(p, ch.t0, hv) + c0);
  }
  if (p.group == 1 && !kDelta) {
    store_bf16(dk, bp.dk + qk_row(p, ch.t0, hv) + c0);
  } else {
    store_part(dk, bp.dk_part + v_row(p, ch.t0, hv) + c0);
  }
  if constexpr (kGate == GateKind::kScalar && kDelta) {
    // ⟨S_e, dS⟩ from the shared tiles: thread t sums the 8-element groups t, t + 128, …, each in
    // element order (dot_part), into bound_part[t].
    arch::cta_for(kMmaThreads,
                  [&](int t) { sm.bound_part[t] = dot_part<kMmaThreads>(sm.s_end, sm.ds, t); });
    __syncthreads();  // row_part and bound_part complete
    fold_row_partials(sm.row_part, c);
    __syncthreads();
    // dg_t = Σ_{s ≥ t} row term + ⟨S_e, dS⟩, in a fixed order (with the delta rule completed by
    // wy_grad_kernel's − Σ_{s ≥ t} v_s·dv_s). The two serial sums run at once on two warps, each
    // by one thread in its order: the suffix sums of the row terms by thread 0 (into
    // row_part[0][t][0]), ⟨S_e, dS⟩ over the 128 parts by thread 32 (into bound_part[0]); then
    // each row's dg is stored by its own thread, all at once.
    arch::cta_for(kMmaThreads, [&](int t) {
      if (t == 0) {
        float running = 0.0f;
        for (int i = c - 1; i >= 0; --i) {
          running += sm.row_part[0][i][0];
          sm.row_part[0][i][0] = running;
        }
      } else if (t == arch::kWarpSize) {
        float bound = 0.0f;
        for (int u = 0; u < kMmaThreads; ++u) bound += sm.bound_part[u];
        sm.bound_part[0] = bound;
      }
    });
    __syncthreads();
    arch::cta_for(c, [&](int i) {
      bp.dg[(ch.t0 + i) * p.v_heads + hv] = sm.row_part[0][i][0] + sm.bound_part[0];
    });
  }
  if constexpr (kSsd) {
    // ⟨H, dS⟩ from the shared tiles, as ⟨S_e, dS⟩ above, into bound_part[t].
    arch::cta_for(kMmaThreads,
                  [&](int t) { sm.bound_part[t] = dot_part<kMmaThreads>(sm.h, sm.ds, t); });
    __syncthreads();  // row_part, key_part and bound_part complete
    fold_row_partials(sm.row_part, c);
    fold_row_partials(sm.key_part, c);
    __syncthreads();
    // dg_t = Σ_{s ≥ t} row term + the last row's terms through G_last, e_last·⟨H, dS⟩ +
    // Σ_{s < last} k_s·(r ⊙ (V dSᵀ))_s (algebraically ⟨S_e, dS⟩ − k_last·dk_last's inter-chunk
    // term), in a fixed order, by one thread. (Its rows' stores here, not after a barrier by each
    // row's thread: that form took grad_kernel<kScalar, false> from 109 registers to 128 and a
    // spill.)
    arch::cta_for(1, [&](int) {
      float bound = 0.0f;
      for (int t = 0; t < kMmaThreads; ++t) bound += sm.bound_part[t];
      float carried = 0.0f;
      for (int i = 0; i < c - 1; ++i) carried += sm.key_part[0][i][0];
      float running =
          bp.fault == BackwardFault::kBoundaryAtEntry ? bound : sm.e[c - 1] * bound + carried;
      for (int i = c - 1; i >= 0; --i) {
        running += sm.row_part[0][i][0];
        bp.dg[(ch.t0 + i) * p.v_heads + hv] = running;
      }
    });
  }
}

// ------------------------------------------------------------------------------ 3. WY (delta rule)

/// wy_grad_kernel's shared memory: 130 KB (one CTA of 16 warps per multiprocessor, which its
/// registers allow anyway: 16 warps of 96 allocated). The tiles whose lifetimes do not overlap
/// share space; a tile is written only after the barrier that ends the last read of what it
/// replaces:
///
///   phase (barrier after)    wide (34 KB)           narrow (17 KB)   gram (18 KB)
///   1 dW          (A)        H                      V lands
///   2 dṼ, X, Ṽ, dX (B)       X, Ṽ written           V read for dṼ, Ṽ
///   3 dT          (C)        X, Ṽ read              dT written       K Kᵀ written
///   4 Y           (D)        Y written              dT read
///   5 dL, M       (E)        Y read                 M written        read
///   6 M K, Mᵀ K   (F)        the row partials       M read
///
/// K, dΔ, dW and T keep their own tiles (K is read until phase 6, T until 5, dΔ and dW until 3).
struct WyStorage {
  SmemBf16<kMmaChunk, kMmaDim> k;
  SmemBf16<kMmaChunk, kMmaDim> dd;   ///< bf16 dΔ (the scan's)
  SmemBf16<kMmaChunk, kMmaDim> dw;   ///< bf16(dW), dW = −dΔ Hᵀ
  SmemBf16<kMmaChunk, kMmaChunk> t;  ///< bf16(T) (the prepare kernel's)
  struct XV {
    SmemBf16<kMmaChunk, kMmaDim> x, vt;  ///< bf16(β K e), bf16(β V): the prepare kernel's X, Ṽ
  };
  union Wide {
    SmemBf16<kMmaDim, kMmaDim> h;  ///< bf16 state entering the chunk
    XV xv;
    SmemBf16<kMmaChunk, kMmaChunk> y;          ///< bf16(Tᵀ dT)
    float part[2][kGradGroups][kMmaChunk][4];  ///< dβ; v·dv (scalar gate: dg's row term); per
                                               ///< group and quad lane
  } wide;
  union Narrow {
    SmemBf16<kMmaChunk, kMmaDim> v;
    SmemBf16<kMmaChunk, kMmaChunk> dt;  ///< bf16(dT), strictly lower
    SmemBf16<kMmaChunk, kMmaChunk> m;   ///< bf16(β ⊙ dL), strictly lower
  } narrow;
  float beta[kMmaChunk];  ///< β, 0 past the end
  float g[kMmaChunk];     ///< G (scalar gate)
  float e[kMmaChunk];     ///< exp(G), 0 past the end
  float dg[kMmaChunk];    ///< grad_kernel's dg (scalar gate), read with β at the start
  /// K Kᵀ's blocks at or left of the diagonal (fp32, phase 3's idle warps'); rows padded by 8
  /// floats so that a warp's stores of an accumulator fall on distinct banks.
  float gram[kMmaChunk][kMmaChunk + 8];
  /// grad_kernel's fp32 dk part of the chunk (rows past c zero), copied with the operands and
  /// read by wy_finish_dk (it was one global round trip at the end, a quarter of the samples).
  alignas(16) DkPartRows dk_prior;
};
static_assert(sizeof(SmemBf16<kMmaChunk, kMmaChunk>) % 16 == 0 &&
                  sizeof(SmemBf16<kMmaChunk, kMmaDim>) % 16 == 0 &&
                  sizeof(WyStorage::Wide) % 16 == 0 && sizeof(WyStorage::Narrow) % 16 == 0,
              "WyStorage: every tile must start 16-byte aligned");
static_assert(sizeof(WyStorage) <= 227 * 1024, "WyStorage: over the sm_90 limit");

/// K Kᵀ's 16×16 blocks at or left of the diagonal, (row block, column block) numbered row by row
/// ((0,0), (1,0), (1,1), (2,0), ...), and the warps of wy_grad_kernel's phase 3 that have no block
/// of dT (group > row block), numbered the same way: warp q of them forms blocks q, q + 6, ...
inline constexpr int kGramBlocks = (kMmaChunk / 16) * (kMmaChunk / 16 + 1) / 2;
inline constexpr int kDtIdleWarps = (kMmaChunk / 16) * (kMmaChunk / 16 - 1) / 2;
__device__ __forceinline__ constexpr int dt_idle_rank(int w, int group) {
  // (w, group), group > w: the rows before w have 3, 2, 1 such warps
  return w * (kMmaChunk / 16 - 1) - w * (w - 1) / 2 + (group - w - 1);
}
struct BlockPair {
  int row, col;
};
__device__ __forceinline__ constexpr BlockPair gram_block(int b) {
  int row = 0;
  while ((row + 1) * (row + 2) / 2 <= b) ++row;
  return {row, b - row * (row + 1) / 2};
}

/// The WY representation's and the triangular inverse's VJPs (gdn-spec.md §6, B4), with
/// X = β ⊙ K ⊙ e and L = β ⊙ (K Kᵀ ⊙ Γ) (e = 1, Γ = 1 without a gate):
///   dW = −dΔ Hᵀ;  dṼ = Tᵀ dΔ;  dX = Tᵀ dW;  dT = StrictLower(dW Xᵀ + dΔ Ṽᵀ)
///   dL = −StrictLower(Tᵀ dT Tᵀ);  M = β ⊙ dL ⊙ Γ
///   dv = β ⊙ dṼ;  dk += β e ⊙ dX + M K + Mᵀ K;  dβ = Σ_e v·dṼ + Σ_d e k·dX + Σ_j dL ⊙ (K Kᵀ ⊙ Γ)
/// and, with the scalar gate, dg_t −= Σ_{s ≥ t} v_s·dv_s (the gauge identity with the delta rule,
/// precision-contract.md §2.3; grad_kernel wrote Σ_{s ≥ t} q_s·dq_s + ⟨S_e, dS⟩). dk's output
/// part (grad_kernel's, fp32 in dk_part) and dg are read and the sums written back by the
/// element's one owner; the row partials (in registers, RowPartials, per column group) are summed
/// by one thread in a fixed order. kGradThreads threads in kGradGroups column groups
/// (chunked_mma_backward.hpp): feature columns 32h.. of dW, dṼ, dX and dk, the 16-column block h
/// of dT, Y, dL, M and K Kᵀ.
template <GateKind kGate>
__global__ void __launch_bounds__(kGradThreads, 1) wy_grad_kernel(MmaBackwardParams bp) {
  constexpr int kThreads = kGradThreads;
  static_assert(kGate != GateKind::kChannel,
                "wy_grad_kernel: per-channel gates scale K's columns (not written)");
  constexpr bool kGated = kGate == GateKind::kScalar;
  const MmaForwardParams& p = bp.fwd;
  WyStorage& sm = arch::shared_storage<WyStorage>();
  const ChunkRef ch = locate_slot(p, blockIdx.x);
  if (!ch.valid) return;
  const std::int64_t slot = blockIdx.x;
  const int hv = static_cast<int>(blockIdx.y);
  const int c = ch.rows;
  const std::int64_t v_stride = static_cast<std::int64_t>(p.v_heads) * kMmaDim;

  copy_wy_operands<kThreads>(sm.k, sm.narrow.v, sm.wide.h, sm.dd, sm.t, bp, ch, slot, hv);
  // grad_kernel's fp32 dk part, read by phase 6 (a group of its own, waited for before (E)).
  copy_float_rows_async_fixed<kThreads, kMmaChunk, kMmaDim>(
      sm.dk_prior, bp.dk_part + v_row(p, ch.t0, hv), static_cast<std::int64_t>(p.v_heads) * kMmaDim,
      c);
  arch::cp_async_commit();
  // β, grad_kernel's dg (read here, not at the end) and the gates: a row's three loads issued
  // before its stores (a load after a store to shared memory through a generic pointer waits
  // for it, so one load per round trip), then G by the prepare kernel's serial sum.
  arch::cta_for(kMmaChunk, [&](int i) {
    const bool valid = i < c;
    const std::int64_t at = (ch.t0 + i) * p.v_heads + hv;
    const float beta = valid ? bf16_to_float(p.beta[at]) : 0.0f;
    const float dg = kGated && valid ? bp.dg[at] : 0.0f;
    const float g = kGated && valid ? p.g[at] : 0.0f;
    sm.beta[i] = beta;
    sm.dg[i] = dg;
    sm.g[i] = g;
  });
  __syncthreads();
  if constexpr (kGated) cumulative_sum_rows(sm.g);  // the prepare kernel's G
  arch::cta_for(kMmaChunk, [&](int i) {
    sm.e[i] = i < c ? (kGated ? arch::exp_approx(sm.g[i]) : 1.0f) : 0.0f;
  });
  const auto decay = [&](int i, int j) {  // Γ_ij
    if constexpr (kGated) return arch::exp_approx(sm.g[i] - sm.g[j]);
    return 1.0f;
  };
  arch::cp_async_wait<2>();  // dΔ and H; T, V, K and dk's part may still be in flight
  __syncthreads();           // dΔ, H, β and e have landed

  const int w = arch::warp_id() % (kMmaChunk / 16);  // row block
  const int group = arch::warp_id() / (kMmaChunk / 16);
  const int c0 = kGroupCols * group;  // the group's first feature column
  const int r0 = 16 * w;
  RowPartials beta_part, v_part;  // dβ; v·dv
  zero(beta_part);
  zero(v_part);
  AccTile<16, kGroupCols> acc;
  // 1. dW = −dΔ Hᵀ (Hᵀ as an n-major B operand).
  zero(acc);
  mma_acc<AStore::kRowMajor, BStore::kNMajor>(acc, sm.dd, r0, sm.wide.h, c0, 0, kMmaDim / 16);
  for_each_pair(acc, [&](int il, int d, float& x0, float& x1) {
    arch::store_u32(sm.dw.ptr(r0 + il, c0 + d), arch::pack_bf16x2(-x0, -x1));
  });
  arch::cp_async_wait<1>();  // T, V, K; dk's part may still be in flight
  __syncthreads();           // (A) dW complete; H read for the last time; T, V, K have landed
  // dṼ = Tᵀ dΔ (k-steps w..3: T is lower triangular); dv = β ⊙ dṼ, dβ += v·dṼ.
  zero(acc);
  mma_acc_triangular<Triangle::kUpper, AStore::kTransposed, BStore::kKMajor>(acc, sm.t, r0, sm.dd,
                                                                             c0, w, kMmaChunk / 16);
  bf16* dv = bp.dv + v_row(p, ch.t0, hv) + c0;
  for_each_pair(acc, [&](int il, int el, float& x0, float& x1) {
    const int i = r0 + il;
    const int e = c0 + el;
    const float vd = sm.narrow.v.at(i, e) * x0 + sm.narrow.v.at(i, e + 1) * x1;
    add_to_row(beta_part, il, el, vd);
    if constexpr (kGated) add_to_row(v_part, il, el, sm.beta[i] * vd);
    x0 *= sm.beta[i];
    x1 *= sm.beta[i];
  });
  store_rows(acc, dv, v_stride, r0, c, StoreBf16Pair{});
  // 2. X, Ṽ rebuilt in bf16 where H was (the prepare kernel's values).
  // In 16-byte pieces: eight elements of a row, one 16-byte load of K and of V and one 16-byte
  // store of X and of Ṽ.
  arch::for_each_lane([&](int lane, int) {
    constexpr int kPieces = kMmaDim / 8;
    const int t = arch::warp_id() * arch::kWarpSize + lane;
    KCV_GLR_UNROLL
    for (int s = 0; s < kMmaChunk * kPieces / kThreads; ++s) {
      const int idx = t + s * kThreads;
      const int i = idx / kPieces;
      const int d = 8 * (idx % kPieces);
      const float beta = sm.beta[i];
      const float be = sm.e[i];
      std::uint32_t kw[4], vw[4], xw[4], tw[4];
      arch::load_u32x4(sm.k.ptr(i, d), kw);
      arch::load_u32x4(sm.narrow.v.ptr(i, d), vw);
      KCV_GLR_UNROLL
      for (int q = 0; q < 4; ++q) {
        xw[q] = arch::pack_bf16x2(beta * (arch::unpack_bf16(kw[q], 0) * be),
                                  beta * (arch::unpack_bf16(kw[q], 1) * be));
        tw[q] = arch::pack_bf16x2(beta * arch::unpack_bf16(vw[q], 0),
                                  beta * arch::unpack_bf16(vw[q], 1));
      }
      arch::store_u32x4(sm.wide.xv.x.ptr(i, d), xw);
      arch::store_u32x4(sm.wide.xv.vt.ptr(i, d), tw);
    }
  });
  // dX = Tᵀ dW; dk = β e ⊙ dX, dβ += e k·dX.
  AccTile<16, kGroupCols>& dk = acc;
  zero(dk);
  mma_acc_triangular<Triangle::kUpper, AStore::kTransposed, BStore::kKMajor>(dk, sm.t, r0, sm.dw,
                                                                             c0, w, kMmaChunk / 16);
  for_each_pair(dk, [&](int il, int dl, float& x0, float& x1) {
    const int i = r0 + il;
    const int d = c0 + dl;
    add_to_row(beta_part, il, dl, sm.e[i] * (sm.k.at(i, d) * x0 + sm.k.at(i, d + 1) * x1));
    x0 *= sm.beta[i] * sm.e[i];
    x1 *= sm.beta[i] * sm.e[i];
  });
  __syncthreads();  // (B) X, Ṽ complete; V read for the last time
  // 3. dT = StrictLower(dW Xᵀ + dΔ Ṽᵀ), the group's 16-column block. The warps that have none
  // (group > w) form phase 5's blocks of K Kᵀ meanwhile, each as that phase formed it (the same
  // products in the same order), so that phase 5 is dL's products alone: the six warps idle here
  // take the ten blocks the ten busy warps of phase 5 took.
  wy_solve_dt<1>(sm.narrow.dt, sm.dw, sm.wide.xv.x, sm.dd, sm.wide.xv.vt, c, w, group);
  if (group > w) {
    for (int b = dt_idle_rank(w, group); b < kGramBlocks; b += kDtIdleWarps) {
      const BlockPair blk = gram_block(b);
      AccTile<16, 16> kk;
      zero(kk);
      mma_acc<AStore::kRowMajor, BStore::kNMajor>(kk, sm.k, 16 * blk.row, sm.k, 16 * blk.col, 0,
                                                  kMmaDim / 16);
      for_each_pair(kk, [&](int il, int jl, float& x0, float& x1) {
        sm.gram[16 * blk.row + il][16 * blk.col + jl] = x0;
        sm.gram[16 * blk.row + il][16 * blk.col + jl + 1] = x1;
      });
    }
  }
  __syncthreads();  // (C) dT and K Kᵀ complete; X, Ṽ read for the last time
  // 4. Y = Tᵀ dT (k-steps w..3), the group's 16-column block.
  wy_solve_y<1>(sm.wide.y, sm.t, sm.narrow.dt, w, group);
  __syncthreads();  // (D) Y complete; dT read for the last time
  // 5. dL = −StrictLower(Y Tᵀ) (k-steps 0..w); dβ += Σ_j dL ⊙ (K Kᵀ ⊙ Γ); M = β ⊙ dL ⊙ Γ; the
  // group's 16-column block j0.. (computed when it is not right of the row's diagonal block).
  static_assert(kGradGroups == kMmaChunk / 16, "one 16-column block of dL per group");
  {
    const int j0 = 16 * group;
    AccTile<16, 16> dl, kk;
    zero(dl);
    zero(kk);
    if (group <= w) {
      mma_acc<AStore::kRowMajor, BStore::kNMajor>(dl, sm.wide.y, r0, sm.t, j0, 0, w + 1);
      for_each_pair(kk, [&](int il, int jl, float& x0, float& x1) {  // phase 3's
        x0 = sm.gram[r0 + il][j0 + jl];
        x1 = sm.gram[r0 + il][j0 + jl + 1];
      });
    }
    for_each_pair(dl, [&](int il, int jl, float& x0, float& x1) {
      const int i = r0 + il;
      const int j = j0 + jl;
      x0 = j < i && i < c ? -x0 * decay(i, j) : 0.0f;  // dL ⊙ Γ from here on
      x1 = j + 1 < i && i < c ? -x1 * decay(i, j + 1) : 0.0f;
      arch::store_u32(sm.narrow.m.ptr(i, j), arch::pack_bf16x2(sm.beta[i] * x0, sm.beta[i] * x1));
    });
    if (bp.fault != BackwardFault::kBetaWithoutGram) {
      zip(kk, dl, [](float& x, float y) { x *= y; });
      for_each_pair(kk, [&](int il, int jl, float& x0, float& x1) {
        add_to_row(beta_part, il, jl, x0 + x1);
      });
    }
  }
  arch::cp_async_wait<0>();
  __syncthreads();  // (E) M complete; Y read for the last time; dk's part has landed
  // 6. dk += M K (k-steps 0..w) + Mᵀ K (k-steps w..3): the Gram K Kᵀ's VJP.
  if (bp.fault != BackwardFault::kKeyWithoutSolve) {
    mma_acc_triangular<Triangle::kStrictLower, AStore::kRowMajor, BStore::kKMajor>(
        dk, sm.narrow.m, r0, sm.k, c0, 0, w + 1);
    mma_acc_triangular<Triangle::kStrictUpper, AStore::kTransposed, BStore::kKMajor>(
        dk, sm.narrow.m, r0, sm.k, c0, w, kMmaChunk / 16);
  }
  // dk = grad_kernel's fp32 part + this part (as group_sum would sum them, from the same fp32).
  wy_finish_dk(dk, bp, ch.t0, hv, c, w, c0, &sm.dk_prior);
  store_partials(beta_part, sm.wide.part[0][group], r0);
  if constexpr (kGated) store_partials(v_part, sm.wide.part[1][group], r0);
  __syncthreads();  // (F) the row partials complete
  arch::cta_for(kMmaChunk, [&](int i) {
    if (i >= c) return;
    bp.dbeta[(ch.t0 + i) * p.v_heads + hv] = __float2bfloat16_rn(group_row_sum(sm.wide.part[0], i));
  });
  if (kGated && bp.fault != BackwardFault::kGateWithoutValue) {
    // dg_t −= Σ_{s ≥ t} v_s·dv_s: the suffix sums by one thread in a fixed order (into
    // part[1][0][t][0]), then each row's dg (read at the start, sm.dg) less it, stored by its own
    // thread, all at once.
    fold_row_partials(sm.wide.part[1], c);
    __syncthreads();
    arch::cta_for(1, [&](int) {
      float running = 0.0f;
      for (int i = c - 1; i >= 0; --i) {
        running += sm.wide.part[1][0][i][0];
        sm.wide.part[1][0][i][0] = running;
      }
    });
    __syncthreads();
    arch::cta_for(c, [&](int i) {
      bp.dg[(ch.t0 + i) * p.v_heads + hv] = sm.dg[i] - sm.wide.part[1][0][i][0];
    });
  }
}

// ------------------------------------------------------------------------------ 4. group sum

/// dq, dk of one token under GVA: the value heads of each q/k head summed in head order (with the
/// delta rule each head's dk part already holds both of its parts).
__global__ void __launch_bounds__(kMmaThreads) group_sum_kernel(MmaBackwardParams bp) {
  const MmaForwardParams& p = bp.fwd;
  const std::int64_t t = blockIdx.x;
  arch::cta_for(p.qk_heads * kMmaDim, [&](int idx) {
    const int h = idx / kMmaDim;
    const int d = idx % kMmaDim;
    float sq = 0.0f, sk = 0.0f;
    for (int m = 0; m < p.group; ++m) {
      const std::int64_t at = v_row(p, t, h * p.group + m) + d;
      sq += bp.dq_part[at];
      sk += bp.dk_part[at];
    }
    const std::int64_t out = (t * p.qk_heads + h) * kMmaDim + d;
    bp.dq[out] = __float2bfloat16_rn(sq);
    bp.dk[out] = __float2bfloat16_rn(sk);
  });
}

// ------------------------------------------------------------------------------ the sequence

/// The backward's launches over a launch policy: launch(name, kernel, grid, shared_bytes, params).
/// kBV: the recompute's value tile; kScanBV: the dH scan's (scan_value_tile; the host emulation's
/// tests also take the scan at kBV, whose dh and dh0 are the same bits).
template <GateKind kGate, bool kDelta, int kBV, int kScanBV = scan_value_tile<kDelta>(kBV),
          typename Launch>
Status backward_sequence(const MmaBackwardParams& bp, Launch&& launch) {
  const MmaForwardParams& p = bp.fwd;
  if (bp.recompute)
    if (Status st = forward_sequence<kGate, kDelta, kBV>(p, launch); !st) return st;
  const dim3 scan_grid(static_cast<unsigned>(p.sequences * p.v_heads * (kMmaDim / kScanBV)));
  const auto scan = [&]<bool kWg>() {
    return launch("dh_scan", dh_scan_kernel<kGate, kDelta, kScanBV, kWg>, scan_grid,
                  sizeof(ScanStorage<kScanBV, kDelta, kWg>), bp, kScanThreads<kGate, kDelta>);
  };
  // At tile 64 (16 columns a warp) the wgmma scan spills 84 bytes under its 96-register limit.
  constexpr bool kScanWg = kDelta && kGate != GateKind::kChannel && kScanBV == 32;
  if (Status st = kScanWg && bp.scan_wgmma ? scan.template operator()<kScanWg>()
                                           : scan.template operator()<false>();
      !st)
    return st;
  const dim3 grad_grid(static_cast<unsigned>(p.slots), static_cast<unsigned>(p.v_heads));
  if constexpr (kGate == GateKind::kChannel) {
    if (Status st = launch("grads", grad_channel_kernel<kDelta>, grad_grid,
                           sizeof(GradChannelStorage), bp, kGradThreads);
        !st)
      return st;
    if constexpr (kDelta) {
      if (Status st = launch("wy_grads", wy_channel_kernel, grad_grid, sizeof(WyChannelStorage), bp,
                             kGradThreads);
          !st)
        return st;
    }
  } else {
    if (Status st = launch("grads", grad_kernel<kGate, kDelta>, grad_grid,
                           sizeof(GradStorageOf<kGate, kDelta>), bp, kGradThreads);
        !st)
      return st;
    if constexpr (kDelta) {
      if (Status st = launch("wy_grads", wy_grad_kernel<kGate>, grad_grid, sizeof(WyStorage), bp,
                             kGradThreads);
          !st)
        return st;
    }
  }
  if (p.group == 1) return {};
  return launch("group_sum", group_sum_kernel, dim3(static_cast<unsigned>(p.tokens)),
                std::size_t{0}, bp);
}

/// f.template operator()<gate, delta rule>() for the members this backward implements.
template <typename F>
Status for_mma_backward_member(Member m, F&& f) {
  switch (m) {
    case Member::kLinearAttention:
      return f.template operator()<GateKind::kNone, false>();
    case Member::kSimpleGla:
      return f.template operator()<GateKind::kScalar, false>();
    case Member::kDeltaNet:
      return f.template operator()<GateKind::kNone, true>();
    case Member::kGatedDeltaNet:
      return f.template operator()<GateKind::kScalar, true>();
    case Member::kGla:
      return f.template operator()<GateKind::kChannel, false>();
    case Member::kKda:
      return f.template operator()<GateKind::kChannel, true>();
    default:
      return make_error(ErrorCode::kInvalidArgument, "unknown member", "member");
  }
}

}  // namespace kcv::glr::dev
