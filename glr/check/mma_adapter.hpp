// File: glr/check/mma_adapter.hpp
// The GLR op's call (HostInputs) as the tensor-core kernels of glr/dev take it, and their outputs
// back in the op's shapes and dtypes. The two Runners of those kernels, on the GPU
// (device_run_mma.hpp) and in the host emulation (emulator/emulated_mma.hpp), both go through it,
// so the adaptation is written once. The kernels take K = V = 128, bf16 q, k, v, dO and β, fp32
// g, int64 cu_seqlens, and every member; a call adapts as follows:
//   - head dims below 128 are zero-padded (q, k columns; v, dO columns; a per-channel gate's
//     columns; the rows and columns of h0 and dht in the call's state layout) and the outputs
//     sliced back (o, ht, dq, dk, dv, dh0, a per-channel dg). Exact: a padded key dimension adds
//     0 to every product over K (its q and k are 0, whatever its gate), and a padded value column
//     of the state, of o, dv and dh0 stays 0 (finite inputs);
//   - bf16 g is widened to fp32 (exact); int32 cu_seqlens become int64 (exact); a fixed-length
//     batch becomes explicit cu_seqlens (the same sequences);
//   - the state layout is passed through (the kernels take [K, V] or [V, K] states);
//   - dg (fp32 in the kernels) is rounded to g's dtype, to nearest even, as the CUDA-core
//     kernels' last stage does; dβ (bf16 in the kernels) is widened to β's dtype when β is fp32;
//   - fp32 β is rounded to bf16, to nearest even, before the call. That rounding is NOT exact and
//     is not one the bf16 grade declares: the verifier judges the outputs against the references
//     of the unrounded β, with no bound loosened for it, so a case with fp32 β may fail.
// Head dims above 128 are refused with an error.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "check/device_results.hpp"
#include "check/inputs.hpp"
#include "glr/dev/chunked_mma_backward.hpp"
#include "kcv/expected.hpp"

namespace kcv::glr::check {

/// The call in the kernels' dtypes, at K = V = 128.
struct MmaInputs {
  Member member = Member::kGatedDeltaNet;
  gpu::Dims dims;  ///< batch 1, seq_len = all tokens, num_seqs = N, K = V = 128
  float scale = 1.0f;
  StateLayout layout = StateLayout::kKV;
  std::vector<std::uint16_t> q, k;    ///< [T, H, 128] bf16 bits
  std::vector<std::uint16_t> v, d_o;  ///< [T, HV, 128] bf16 bits
  std::vector<float> g;               ///< [T, HV] (gated members; else empty)
  std::vector<std::uint16_t> beta;    ///< [T, HV] bf16 bits (delta rule; else empty)
  std::vector<float> h0, dht;         ///< [N, HV, 128, 128] in `layout`
  std::vector<std::int64_t> cu_seqlens;
};

/// The kernels' outputs, in DeviceResults order.
enum MmaOutput : int { kMmaO, kMmaHt, kMmaDq, kMmaDk, kMmaDv, kMmaDg, kMmaDbeta, kMmaDh0 };
inline constexpr int kMmaOutputs = 8;

/// The kernels' output bytes at K = V = 128 (0 for dg without a gate, dβ without the delta rule).
using MmaOutputBytes = std::array<std::size_t, kMmaOutputs>;

/// Where a Runner keeps the adapted inputs and the padded outputs (device pointers on the GPU,
/// host pointers in the emulation); `out` in MmaOutput order, null where the size is 0.
struct MmaBuffers {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* g = nullptr;
  const void* beta = nullptr;
  const void* h0 = nullptr;
  const void* d_o = nullptr;
  const void* dht = nullptr;
  const void* cu_seqlens = nullptr;
  std::array<void*, kMmaOutputs> out{};
};

/// The call adapted as above; an error naming the member or the head dim the kernels refuse.
[[nodiscard]] Expected<MmaInputs> mma_inputs(const HostInputs& in);

MmaOutputBytes mma_output_bytes(const MmaInputs& x);

/// Bytes of one workspace that serves the forward and then the backward.
[[nodiscard]] Expected<std::size_t> mma_workspace_bytes(const MmaInputs& x);

/// The forward's and the backward's parameter blocks over `b` and the workspace (the kernels'
/// own checks: pointers present, 16-byte alignment, workspace size).
[[nodiscard]] Expected<dev::MmaForwardParams> mma_forward_block(const MmaInputs& x,
                                                                const MmaBuffers& b,
                                                                void* workspace, std::size_t bytes);
[[nodiscard]] Expected<dev::MmaBackwardParams> mma_backward_block(const MmaInputs& x,
                                                                  const MmaBuffers& b,
                                                                  void* workspace,
                                                                  std::size_t bytes);

/// The padded outputs (raw bytes, MmaOutput order, sizes of mma_output_bytes) sliced back to the
/// call's head dims and written in its dtypes: o, ht, dq, dk, dv, (dg), (dbeta), dh0.
using MmaOutputData = std::array<std::vector<std::uint8_t>, kMmaOutputs>;
DeviceResults mma_results(const HostInputs& in, const MmaOutputData& padded);

}  // namespace kcv::glr::check
