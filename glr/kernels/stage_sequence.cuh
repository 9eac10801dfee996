// File: glr/kernels/stage_sequence.cuh
// The member stage sequences, written once over the gate kind and the delta rule and over a launch
// policy: `launch(stage_name, kernel, grid, shared_bytes, params)` returns a Status. pipeline.cuh
// supplies the CUDA policy (<<<>>> on a stream); the CPU emulator of glr/check supplies one that
// runs the same kernels on host threads. Chunk-parallel stages run one CTA per (chunk bound, value
// head); the serial passes one CTA per (sequence, value head, kStateTile columns). Shared memory
// per CTA is the sizeof of each stage's shared-storage struct. Plain C++ (no CUDA syntax).
#pragma once

#include "glr/kernels/stage_dh_scan.cuh"
#include "glr/kernels/stage_kgrads.cuh"
#include "glr/kernels/stage_output.cuh"
#include "glr/kernels/stage_prepare.cuh"
#include "glr/kernels/stage_state.cuh"
#include "glr/kernels/stage_vgrads.cuh"
#include "glr/kernels/stage_wy.cuh"
#include "kcv/expected.hpp"

namespace kcv::glr::gpu::detail {

inline dim3 chunk_grid(const Params& p, int z = 1) {
  return dim3(static_cast<unsigned>(p.chunk_bound), static_cast<unsigned>(p.v_heads),
              static_cast<unsigned>(z));
}

inline dim3 serial_grid(const Params& p) {
  const std::int64_t tiles = (p.value_dim + kStateTile - 1) / kStateTile;
  return dim3(static_cast<unsigned>(p.sequences * p.v_heads * tiles));
}

// F2–F4: everything the output and the backward read (A^qk, T, W, U, chunk states, Δ).
template <GateKind kGate, bool kDelta, typename Launch>
Status recurrence_sequence(const Params& p, Launch&& launch) {
  if (Status st =
          launch("prepare", prepare_kernel<kGate, kDelta>, chunk_grid(p), sizeof(PrepareShared), p);
      !st)
    return st;
  return launch("state", state_kernel<kGate, kDelta>, serial_grid(p), sizeof(StateShared), p);
}

template <GateKind kGate, bool kDelta, typename Launch>
Status forward_sequence(const Params& p, Launch&& launch) {
  if (Status st = recurrence_sequence<kGate, kDelta>(p, launch); !st) return st;
  const int out_tiles = (p.value_dim + kOutTile - 1) / kOutTile;
  return launch("output", output_kernel<kGate>, chunk_grid(p, out_tiles), sizeof(OutputShared), p);
}

template <GateKind kGate, bool kDelta, typename Launch>
Status backward_sequence(const Params& p, Launch&& launch) {
  if (Status st = recurrence_sequence<kGate, kDelta>(p, launch); !st) return st;
  if (Status st =
          launch("dh_scan", dh_scan_kernel<kGate, kDelta>, serial_grid(p), sizeof(DhScanShared), p);
      !st)
    return st;
  if (Status st = launch("vgrads", vgrads_kernel<kDelta>, chunk_grid(p), sizeof(VGradsShared), p);
      !st)
    return st;
  if constexpr (kDelta) {
    if (Status st = launch("wy", wy_kernel<kGate>, chunk_grid(p), sizeof(WyShared), p); !st)
      return st;
  }
  return launch("kgrads", kgrads_kernel<kGate, kDelta>, chunk_grid(p), sizeof(KGradsShared), p);
}

}  // namespace kcv::glr::gpu::detail
