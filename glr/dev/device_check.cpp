// File: glr/dev/device_check.cpp
// glr_dev_check: the tensor-core forward (chunked_mma_forward.hpp) and backward
// (chunked_mma_backward.hpp, its checks in device_check_backward.cpp) on a GPU.
//  1. accuracy: GDN, K = V = 128, B1·H4 at T ∈ {64, 1000, 8192} and a varlen GVA case
//     (700+1+64+300+65, H = 2, HV = 4), inputs drawn by fla's recipe (glr/tests/support/
//     problems.hpp) in the kernel's dtypes; every element of o and of the final state against the
//     fp64 chunked reference within the bf16-grade bound (error_model.hpp's forward_bounds),
//     outputs poisoned with NaN before each run; value tiles 32 and 64 must agree bit for bit.
//     The reference and the bound run per value head on all cores (the bound's G term is then the
//     head's own largest log-decay, at most the case's: per head the bound can only be stricter).
//  2. determinism: 5 runs of the T = 8192 case and of timing shape 1, bit for bit.
//  3. timing: the forward at B1·T8192·H32 and B4·T4096·H16 (D = 128) against kcv's CUDA-core
//     forward (include/kcv/glr/gpu.hpp) on the same inputs, CUDA events around each call, median
//     of --reps calls after warm-up calls; plus max |o_mma − o_kcv| / RMS(o_kcv) between the two
//     implementations, reported only (accuracy is judged in 1, against the fp64 reference).
//  4. the backward (device_check_backward.cpp): SSD accuracy at T ∈ {64, 1000, 8192} and varlen
//     GVA with 5-run determinism at T = 8192, DeltaNet and GDN accuracy at T ∈ {64, 1000} and
//     varlen GVA with 3-run determinism, and forward + backward timing (SSD at the two shapes,
//     DeltaNet and GDN at B1·T8192·H32) against kcv's CUDA-core forward + backward.
//  5. with --state-wgmma, only forward version 13 (MmaForwardParams::state_wgmma, value tile 32)
//     against version 12: every member's forward with the state pass on wgmma against the fp64
//     reference, 3 runs bitwise equal, its o and final state against the mma.sync pass's; the
//     forward's time and stage profile at B1·T8192·H32 and B4·T4096·H16 both ways, tile 32;
//     the same for DeltaNet's and GDN's recomputing backward with the dH scan on wgmma too
//     (backward version 25).
// Prints a short table last; writes results.tsv under --out. Exit status 0 only if every check
// passes. Run by glr/dev/run_on_h200.sh.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "glr/dev/chunked_mma_forward.hpp"
#include "glr/dev/dev_case.hpp"
#include "glr/dev/device_check_backward.hpp"
#include "glr/dev/device_support.hpp"
#include "support/precision_emulation.hpp"
#include "support/problems.hpp"

namespace kcv::glr::dev {
namespace {

/// One problem of one member on the device: inputs, outputs, the workspace.
struct DeviceCase {
  Member member = Member::kGatedDeltaNet;
  HostTensors t;
  float scale = 0;
  StateLayout layout = StateLayout::kKV;
  DeviceBuffer q, k, v, g, beta, h0, cu, o, ht, ws;
  MmaForwardParams params;

  DeviceCase(Member m, HostTensors host, float s, StateLayout l)
      : member(m), t(std::move(host)), scale(s), layout(l) {
    q = DeviceBuffer::of(t.q);
    k = DeviceBuffer::of(t.k);
    v = DeviceBuffer::of(t.v);
    g = DeviceBuffer::of(t.g);
    beta = DeviceBuffer::of(t.beta);
    h0 = DeviceBuffer::of(t.h0);
    cu = DeviceBuffer::of(t.cu_seqlens);
    o = DeviceBuffer(t.v.size() * sizeof(bf16));
    const std::int64_t seqs = t.dims.num_seqs > 0 ? t.dims.num_seqs : t.dims.batch;
    ht = DeviceBuffer(static_cast<std::size_t>(seqs * t.dims.v_heads * kMmaDim * kMmaDim) * 4);
    Expected<std::size_t> bytes = mma_forward_workspace_bytes(member, t.dims);
    check_status(bytes ? Status{} : Status{bytes.error()}, "workspace");
    ws = DeviceBuffer(*bytes);
    const bool delta = traits(member).delta_rule;
    MmaForwardTensors mt{q.ptr,
                         k.ptr,
                         v.ptr,
                         traits(member).gate != GateKind::kNone ? g.as<float>() : nullptr,
                         delta ? beta.ptr : nullptr,
                         h0.as<float>(),
                         cu.as<std::int64_t>(),
                         o.ptr,
                         ht.as<float>()};
    Expected<MmaForwardParams> p =
        mma_forward_params(member, t.dims, scale, layout, mt, ws.ptr, ws.bytes);
    check_status(p ? Status{} : Status{p.error()}, "params");
    params = *p;
  }

  void poison() {
    CHECK_CUDA(cudaMemset(o.ptr, 0xff, o.bytes));
    CHECK_CUDA(cudaMemset(ht.ptr, 0xff, ht.bytes));
    CHECK_CUDA(cudaMemset(ws.ptr, 0xff, ws.bytes));
  }

  void run(int tile, StageTimes* times = nullptr) {
    check_status(mma_forward(member, params, tile, nullptr, times), "mma_forward");
    CHECK_CUDA(cudaGetLastError());
  }

  void fetch(std::vector<bf16>& host_o, std::vector<float>& host_ht) const {
    CHECK_CUDA(cudaDeviceSynchronize());
    host_o.resize(o.bytes / sizeof(bf16));
    host_ht.resize(ht.bytes / sizeof(float));
    CHECK_CUDA(cudaMemcpy(host_o.data(), o.ptr, o.bytes, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(host_ht.data(), ht.ptr, ht.bytes, cudaMemcpyDeviceToHost));
  }
};

// ----------------------------------------------------------------------------- 1. accuracy

Row accuracy_case(Member member, const std::string& label, std::vector<std::int64_t> lengths,
                  std::int64_t h, std::int64_t hv, std::uint64_t seed, int determinism_runs) {
  const testing::ProblemSpec spec = mma_spec(std::move(lengths), h, hv, seed);
  const Problem p = testing::kernel_inputs(testing::make_case(member, spec).problem);
  DeviceCase dc(member, host_tensors(p), static_cast<float>(p.scale), p.layout);
  std::vector<bf16> o32, o64, o_again;
  std::vector<float> h32, h64, h_again;
  dc.poison();
  dc.run(32);
  dc.fetch(o32, h32);
  dc.poison();
  dc.run(64);
  dc.fetch(o64, h64);
  Expected<Expectation> ex = expect_by_head(member, p);
  check_status(ex ? Status{} : Status{ex.error()}, "reference");
  const Expectation& e = *ex;
  const Judgement j = judge(o32, h32, e);
  const bool tiles_agree = same_bits(o32, o64) && same_bits(h32, h64);
  bool deterministic = true;
  for (int r = 1; r < determinism_runs; ++r) {
    dc.poison();
    dc.run(32);
    dc.fetch(o_again, h_again);
    deterministic = deterministic && same_bits(o32, o_again) && same_bits(h32, h_again);
  }
  Row row{label, j.describe(), j.pass() && tiles_agree && deterministic};
  row.result += tiles_agree ? "; tiles 32/64 bitwise equal" : "; tiles 32/64 DIFFER";
  if (determinism_runs > 1)
    row.result += deterministic ? "; " + std::to_string(determinism_runs) + " runs bitwise equal"
                                : "; runs DIFFER";
  std::printf("accuracy %-28s %s\n", label.c_str(), row.result.c_str());
  std::fflush(stdout);
  return row;
}

// ------------------------------------------------- 5. the state pass on wgmma (forward 13)

/// One case with MmaForwardParams::state_wgmma on (value tile 32): against the fp64 reference
/// under the bf16 grade's bound, 3 runs bitwise equal, and o and the final state against the
/// mma.sync state pass's (the host emulation has them bitwise equal; the hardware's fp32
/// accumulation is not IEEE, so the difference is reported, not judged).
Row wgmma_accuracy_case(Member member, const std::string& label, std::vector<std::int64_t> lengths,
                        std::int64_t h, std::int64_t hv, std::uint64_t seed) {
  const testing::ProblemSpec spec = mma_spec(std::move(lengths), h, hv, seed);
  const Problem p = testing::kernel_inputs(testing::make_case(member, spec).problem);
  DeviceCase dc(member, host_tensors(p), static_cast<float>(p.scale), p.layout);
  std::vector<bf16> o_sync, o32, o_again;
  std::vector<float> h_sync, h32, h_again;
  dc.params.state_wgmma = false;
  dc.poison();
  dc.run(32);
  dc.fetch(o_sync, h_sync);
  dc.params.state_wgmma = true;
  dc.poison();
  dc.run(32);
  dc.fetch(o32, h32);
  bool deterministic = true;
  for (int r = 1; r < 3; ++r) {
    dc.poison();
    dc.run(32);
    dc.fetch(o_again, h_again);
    deterministic = deterministic && same_bits(o32, o_again) && same_bits(h32, h_again);
  }
  Expected<Expectation> ex = expect_by_head(member, p);
  check_status(ex ? Status{} : Status{ex.error()}, "reference");
  const Judgement j = judge(o32, h32, *ex);
  Row row{label + " (wgmma state pass)", j.describe(), j.pass() && deterministic};
  row.result += deterministic ? "; 3 runs bitwise equal" : "; runs DIFFER";
  char vs[96];
  std::snprintf(vs, sizeof vs, "; vs mma.sync: o %s (max|Δ|/RMS %.3g), final state %s",
                same_bits(o32, o_sync) ? "bitwise equal" : "differs", rel_max_diff(o32, o_sync),
                same_bits(h32, h_sync) ? "bitwise equal" : "differs");
  row.result += vs;
  std::printf("accuracy %-40s %s\n", row.what.c_str(), row.result.c_str());
  std::fflush(stdout);
  return row;
}

/// The forward at one GDN shape with the state pass on mma.sync and on wgmma: median ms of the
/// whole forward and of each launch, at value tile 32 (the wgmma pass's only one).
void time_state_wgmma(std::int64_t b, std::int64_t t, std::int64_t h, int warmup, int reps) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(kMmaDim));
  DeviceCase dc(Member::kGatedDeltaNet, random_inputs(b, t, h, 42 + b), scale, StateLayout::kKV);
  constexpr int tile = 32;
  std::printf("state pass timing B%lld T%lld H%lld D128 (tile %d):", static_cast<long long>(b),
              static_cast<long long>(t), static_cast<long long>(h), tile);
  for (const bool wg : {false, true}) {
    dc.params.state_wgmma = wg;
    dc.poison();
    const double ms = median_ms([&] { dc.run(tile); }, warmup, reps);
    const auto stages =
        median_stages([&](StageTimes& st) { dc.run(tile, &st); }, reps, wg ? "wgmma " : "mma ");
    std::printf(" %s forward %.3f ms (", wg ? "wgmma" : "mma.sync", ms);
    for (const auto& [stage, m] : stages) std::printf(" %s %.3f", stage.c_str(), m);
    std::printf(" );");
  }
  std::printf("\n");
  std::fflush(stdout);
}

// ----------------------------------------------------------------------------- 3. timing

struct Timing {
  std::string shape;
  double mma_default = 0, mma_other = 0, kcv = 0, diff = 0;
  int tile = 0;
  bool deterministic = true;
};

Timing time_shape(std::int64_t b, std::int64_t t, std::int64_t h, int warmup, int reps,
                  int determinism_runs) {
  Timing tm;
  tm.shape =
      "B" + std::to_string(b) + " T" + std::to_string(t) + " H" + std::to_string(h) + " D128";
  const float scale = 1.0f / std::sqrt(static_cast<float>(kMmaDim));
  DeviceCase dc(Member::kGatedDeltaNet, random_inputs(b, t, h, 42 + b), scale, StateLayout::kKV);
  tm.tile = default_value_tile(dc.params, multiprocessors());
  const int other = tm.tile == 32 ? 64 : 32;
  dc.poison();
  tm.mma_default = median_ms([&] { dc.run(tm.tile); }, warmup, reps);
  tm.mma_other = median_ms([&] { dc.run(other); }, warmup, reps);
  std::vector<bf16> o_mma, o_again, o_kcv;
  std::vector<float> h_mma, h_again;
  dc.poison();
  dc.run(tm.tile);
  dc.fetch(o_mma, h_mma);
  for (int r = 1; r < determinism_runs; ++r) {
    dc.poison();
    dc.run(tm.tile);
    dc.fetch(o_again, h_again);
    tm.deterministic = tm.deterministic && same_bits(o_mma, o_again) && same_bits(h_mma, h_again);
  }

  // kcv's CUDA-core forward on the same device buffers.
  gpu::Config cfg;
  cfg.member = Member::kGatedDeltaNet;
  cfg.scale = scale;
  const gpu::Inputs in{dc.q.ptr,    dc.k.ptr,          dc.v.ptr, dc.g.ptr,
                       dc.beta.ptr, dc.h0.as<float>(), nullptr,  nullptr};
  DeviceBuffer o_ref(dc.o.bytes), h_ref(dc.ht.bytes);
  const gpu::ForwardOutputs out{o_ref.ptr, h_ref.as<float>()};
  Expected<std::size_t> bytes = gpu::forward_workspace_bytes(dc.t.dims, cfg);
  check_status(bytes ? Status{} : Status{bytes.error()}, "kcv workspace");
  DeviceBuffer ws(*bytes);
  tm.kcv = median_ms(
      [&] {
        check_status(gpu::forward(dc.t.dims, cfg, in, out, ws.ptr, ws.bytes, nullptr), "kcv");
      },
      std::min(warmup, 2), reps);
  CHECK_CUDA(cudaDeviceSynchronize());
  o_kcv.resize(o_mma.size());
  CHECK_CUDA(cudaMemcpy(o_kcv.data(), o_ref.ptr, o_ref.bytes, cudaMemcpyDeviceToHost));
  tm.diff = rel_max_diff(o_mma, o_kcv);
  std::printf(
      "timing %s: mma tile %d %.3f ms, tile %d %.3f ms, kcv CUDA-core %.3f ms; "
      "max|o_mma - o_kcv|/RMS %.3g; %d runs %s\n",
      tm.shape.c_str(), tm.tile, tm.mma_default, other, tm.mma_other, tm.kcv, tm.diff,
      determinism_runs, tm.deterministic ? "bitwise equal" : "DIFFER");
  std::fflush(stdout);
  return tm;
}

int run(int argc, char** argv) {
  std::string out_dir = ".";
  int reps = 30, warmup = 5;
  bool timing_only = false;
  bool small = false;
  bool state_wgmma = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc)
      out_dir = argv[++i];
    else if (a == "--reps" && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else if (a == "--timing-only")
      timing_only = true;
    else if (a == "--small")
      small = true;
    else if (a == "--state-wgmma")
      state_wgmma = true;
    else {
      std::fprintf(stderr,
                   "usage: glr_dev_check [--out DIR] [--reps N] [--timing-only | --small | "
                   "--state-wgmma]\n");
      return 2;
    }
  }
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, sm_%d%d\n", prop.name, prop.multiProcessorCount, prop.major,
              prop.minor);
  constexpr Member kGdn = Member::kGatedDeltaNet, kGla = Member::kGla, kKda = Member::kKda;
  if (state_wgmma) {  // forward version 13 against version 12, alone
    bool pass = true;
    const auto row = [&](Row r) { pass = pass && r.pass; };
    row(wgmma_accuracy_case(kGdn, "gdn B1 T64 H4", {64}, 4, 4, 11));
    row(wgmma_accuracy_case(kGdn, "gdn B1 T1000 H4", {1000}, 4, 4, 12));
    row(wgmma_accuracy_case(kGdn, "gdn B1 T8192 H4", {8192}, 4, 4, 13));
    row(wgmma_accuracy_case(kGdn, "gdn varlen 700+1+64+300+65 H2/HV4", {700, 1, 64, 300, 65}, 2, 4,
                            14));
    for (Member m : {Member::kLinearAttention, Member::kSimpleGla, Member::kDeltaNet, kGla, kKda})
      row(wgmma_accuracy_case(m, std::string(name(m)) + " B1 T1000 H4", {1000}, 4, 4, 30));
    for (const Row& r : wgmma_backward_rows()) row(r);
    time_state_wgmma(1, 8192, 32, warmup, reps);
    time_state_wgmma(4, 4096, 16, warmup, reps);
    time_wgmma_backward(kGdn, 1, 8192, 32, warmup, reps);
    time_wgmma_backward(Member::kDeltaNet, 1, 8192, 32, warmup, reps);
    std::printf("\nglr_dev_check --state-wgmma: %s\n",
                pass ? "all checks pass" : "SOME CHECK FAILED");
    return pass ? 0 : 1;
  }
  std::vector<Row> rows;
  if (small) {  // for compute-sanitizer: two small cases, no timing
    rows.push_back(accuracy_case(kGdn, "gdn B1 T64 H4", {64}, 4, 4, 11, 1));
    rows.push_back(accuracy_case(kGdn, "gdn varlen 100+1+64 H2/HV4", {100, 1, 64}, 2, 4, 15, 1));
    rows.push_back(accuracy_case(kGla, "gla varlen 100+1+64 H2/HV4", {100, 1, 64}, 2, 4, 17, 1));
    rows.push_back(accuracy_case(kKda, "kda varlen 100+1+64 H2/HV4", {100, 1, 64}, 2, 4, 27, 1));
  } else if (!timing_only) {
    rows.push_back(accuracy_case(kGdn, "gdn B1 T64 H4", {64}, 4, 4, 11, 1));
    rows.push_back(accuracy_case(kGdn, "gdn B1 T1000 H4", {1000}, 4, 4, 12, 1));
    rows.push_back(accuracy_case(kGdn, "gdn B1 T8192 H4", {8192}, 4, 4, 13, 5));
    rows.push_back(accuracy_case(kGdn, "gdn varlen 700+1+64+300+65 H2/HV4", {700, 1, 64, 300, 65},
                                 2, 4, 14, 1));
    rows.push_back(accuracy_case(kGla, "gla B1 T1000 H4", {1000}, 4, 4, 16, 1));
    rows.push_back(accuracy_case(kGla, "gla B1 T8192 H4", {8192}, 4, 4, 18, 5));
    rows.push_back(accuracy_case(kGla, "gla varlen 700+1+64+300+65 H2/HV4", {700, 1, 64, 300, 65},
                                 2, 4, 19, 1));
    rows.push_back(accuracy_case(kKda, "kda B1 T1000 H4", {1000}, 4, 4, 26, 1));
    rows.push_back(accuracy_case(kKda, "kda B1 T8192 H4", {8192}, 4, 4, 28, 5));
    rows.push_back(accuracy_case(kKda, "kda varlen 700+1+64+300+65 H2/HV4", {700, 1, 64, 300, 65},
                                 2, 4, 29, 1));
  }
  if (!timing_only) {
    std::vector<Row> more = backward_accuracy_rows(small);
    rows.insert(rows.end(), more.begin(), more.end());
  }
  std::vector<Timing> timings;
  std::vector<BackwardTiming> backward_timings;
  if (!small) {
    timings.push_back(time_shape(1, 8192, 32, warmup, reps, 5));
    timings.push_back(time_shape(4, 4096, 16, warmup, reps, 1));
    backward_timings.push_back(time_backward(Member::kSimpleGla, 1, 8192, 32, warmup, reps));
    backward_timings.push_back(time_backward(Member::kSimpleGla, 4, 4096, 16, warmup, reps));
    for (Member m : {Member::kLinearAttention, Member::kDeltaNet, Member::kGatedDeltaNet,
                     Member::kGla, Member::kKda})
      backward_timings.push_back(time_backward(m, 1, 8192, 32, warmup, reps));
    for (Member m : {Member::kDeltaNet, Member::kGatedDeltaNet, Member::kGla, Member::kKda})
      backward_timings.push_back(time_backward(m, 4, 4096, 16, warmup, reps));
  }

  bool pass = true;
  std::ofstream tsv(out_dir + "/results.tsv");
  std::printf("\n| check | result |\n|---|---|\n");
  for (const Row& r : rows) {
    std::printf("| %s | %s |\n", r.what.c_str(), r.result.c_str());
    tsv << "accuracy\t" << r.what << "\t" << r.result << "\n";
    pass = pass && r.pass;
  }
  std::printf(
      "\n| shape | mma fwd ms (tile) | mma other tile ms | kcv CUDA-core fwd ms | speed-up | "
      "max|Δo|/RMS vs kcv | 5-run bitwise |\n|---|---|---|---|---|---|---|\n");
  for (const Timing& t : timings) {
    std::printf("| %s | %.3f (%d) | %.3f | %.3f | %.1fx | %.3g | %s |\n", t.shape.c_str(),
                t.mma_default, t.tile, t.mma_other, t.kcv, t.kcv / t.mma_default, t.diff,
                t.shape.rfind("B1 ", 0) == 0 ? (t.deterministic ? "yes" : "NO") : "-");
    tsv << "timing\t" << t.shape << "\t" << t.mma_default << "\t" << t.tile << "\t" << t.mma_other
        << "\t" << t.kcv << "\t" << t.diff << "\n";
    pass = pass && t.deterministic;  // the difference to kcv is reported, not judged
  }
  std::printf(
      "\n| member, shape | mma fwd+bwd ms (tile) | of which bwd ms | other tile ms | kcv CUDA-core "
      "fwd+bwd ms | speed-up | max|Δ|/RMS vs kcv (dq, dk, dv) | training step ms (forward keeps "
      "its pieces) | step's gradients = recomputing backward's |\n"
      "|---|---|---|---|---|---|---|---|---|\n");
  for (const BackwardTiming& t : backward_timings) {
    std::printf("| %s | %.3f (%d) | %.3f | %.3f | %.3f | %.1fx | %.3g, %.3g, %.3g | %.3f | %s |\n",
                t.shape.c_str(), t.mma, t.tile, t.mma_bwd, t.mma_other, t.kcv, t.kcv / t.mma,
                t.diff_dq, t.diff_dk, t.diff_dv, t.mma_step, t.step_equal ? "bitwise" : "DIFFER");
    tsv << "backward_timing\t" << t.shape << "\t" << t.mma << "\t" << t.tile << "\t" << t.mma_bwd
        << "\t" << t.mma_other << "\t" << t.kcv << "\t" << t.diff_dq << "\t" << t.diff_dk << "\t"
        << t.diff_dv << "\t" << t.mma_step << "\t" << t.step_equal << "\n";
    pass = pass && t.step_equal;
  }
  std::printf(
      "\n| member, shape | stage profile at the default tile: median ms per launch |\n"
      "|---|---|\n");
  for (const BackwardTiming& t : backward_timings) {
    std::printf("| %s |", t.shape.c_str());
    for (const auto& [stage, ms] : t.stages) {
      std::printf(" %s %.3f;", stage.c_str(), ms);
      tsv << "stage\t" << t.shape << "\t" << stage << "\t" << ms << "\n";
    }
    std::printf(" |\n");
  }
  std::printf("\nglr_dev_check: %s\n", pass ? "all checks pass" : "SOME CHECK FAILED");
  return pass ? 0 : 1;
}

}  // namespace
}  // namespace kcv::glr::dev

int main(int argc, char** argv) { return kcv::glr::dev::run(argc, argv); }
