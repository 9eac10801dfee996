// File: glr/dev/device_check_backward.hpp
// The backward's checks of glr_dev_check (device_check_backward.cpp): accuracy rows and timings,
// called by device_check.cpp's main after the forward's.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "glr/dev/device_support.hpp"

namespace kcv::glr::dev {

/// SSD, DeltaNet and GDN against the fp64 chunked reference's backward under the bf16-grade
/// gradient bound: SSD at T ∈ {64, 1000, 8192} (B1, H4) and varlen GVA, DeltaNet and GDN at
/// T ∈ {64, 1000} and a shorter varlen GVA case; `small`: T = 64 of each and small varlen GVA
/// cases of SSD and DeltaNet.
std::vector<Row> backward_accuracy_rows(bool small);

/// DeltaNet and GDN (T = 1000, B1·H4; GDN also T = 64 and varlen GVA) with the state pass and
/// the dH scan on wgmma: the fp64 reference's bound, 3 runs bitwise equal, the gradients against
/// the mma.sync passes' (glr_dev_check --state-wgmma).
std::vector<Row> wgmma_backward_rows();

/// The recomputing backward of `member` at B·T·H (D = 128), value tile 32, with the mma.sync and
/// with the wgmma passes: median ms and the stage profile of each, printed.
void time_wgmma_backward(Member member, std::int64_t b, std::int64_t t, std::int64_t h, int warmup,
                         int reps);

struct BackwardTiming {
  std::string shape;
  int tile = 0;
  double mma = 0, mma_other = 0, mma_bwd = 0, kcv = 0;  ///< ms: fwd+bwd, other tile, bwd, kcv
  double diff_dq = 0, diff_dk = 0, diff_dv = 0;         ///< max |Δ| / RMS(kcv's), reported only
  /// The training step: the forward keeping its pieces, then the backward without the recompute
  /// (ms), and whether its gradients equal the recomputing backward's bit for bit.
  double mma_step = 0;
  bool step_equal = false;
  /// The stage profile at the default tile: median ms of each launch, the forward's stages
  /// ("fwd prepare", ...) then the backward's ("bwd prepare", ..., "bwd grads", ...).
  std::vector<std::pair<std::string, double>> stages;
};

/// Forward + backward of `member` (LA, SSD, DeltaNet or GDN) at B·T·H (D = 128): tensor cores
/// against kcv's CUDA cores.
BackwardTiming time_backward(Member member, std::int64_t b, std::int64_t t, std::int64_t h,
                             int warmup, int reps);

}  // namespace kcv::glr::dev
