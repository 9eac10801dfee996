// File: glr/dev/device_check_backward.cpp
// The backward's part of glr_dev_check (device_check.cpp runs it after the forward's):
//  1. accuracy: SSD, K = V = 128, B1·H4 at T ∈ {64, 1000, 8192} and a varlen GVA case
//     (700+1+64+300+65, H = 2, HV = 4), with h0 and dht; DeltaNet and GDN at T ∈ {64, 1000} (B1,
//     H4) and varlen GVA 300+1+64+65 (H = 2, HV = 4, 3 runs bitwise equal); dq, dk, dv, dg (SSD,
//     GDN), dβ (DeltaNet, GDN) and dh0 against the fp64 chunked reference's backward within the
//     bf16-grade bound of the gradients (error_model.hpp's backward_bounds), gradients and
//     workspace poisoned before each run; value tiles 32 and 64 bitwise equal; 5 runs bitwise equal
//     at T = 8192. Without GVA the reference and the bound run per value head on all cores.
//  2. timing: forward + backward of SSD, DeltaNet and GDN at B1·T8192·H32 and B4·T4096·H16 and of
//     LA at the first (D = 128, the shapes device_check.cpp asks for): the tensor-core forward and
//     backward against kcv's CUDA-core forward and backward
//     (include/kcv/glr/gpu.hpp) on the same device buffers, median of --reps calls after warm-up
//     (CUDA events); the backward alone too; max |dq|, |dk|, |dv| differences between the two
//     relative to RMS of kcv's, reported only; the stage profile (each launch timed); and the
//     training step (the forward keeping its pieces, the backward without its recompute), whose
//     gradients must equal the recomputing backward's bit for bit.
#include "glr/dev/device_check_backward.hpp"

#include "glr/dev/chunked_mma_backward.hpp"
#include "glr/dev/device_support.hpp"
#include "support/precision_emulation.hpp"
#include "support/problems.hpp"

namespace kcv::glr::dev {
namespace {

const char* label_of(Member m) { return name(m).data(); }

/// One backward problem on the device: inputs, dO, dht, gradients, workspace, parameters. The
/// host tensors' g (β) must be empty for a member without a gate (without the delta rule).
struct BackwardCase {
  Member member;
  HostTensors t;
  DeviceBuffer q, k, v, g, beta, h0, cu, d_o, dht, dq, dk, dv, dg, dbeta, dh0, ws;
  MmaBackwardParams params;

  BackwardCase(Member m, HostTensors host, const HostCotangents& hc, float scale,
               StateLayout layout)
      : member(m), t(std::move(host)) {
    q = DeviceBuffer::of(t.q);
    k = DeviceBuffer::of(t.k);
    v = DeviceBuffer::of(t.v);
    g = DeviceBuffer::of(t.g);
    beta = DeviceBuffer::of(t.beta);
    h0 = DeviceBuffer::of(t.h0);
    cu = DeviceBuffer::of(t.cu_seqlens);
    d_o = DeviceBuffer::of(hc.d_o);
    dht = DeviceBuffer::of(hc.dht);
    dq = DeviceBuffer(t.q.size() * sizeof(bf16));
    dk = DeviceBuffer(t.k.size() * sizeof(bf16));
    dv = DeviceBuffer(t.v.size() * sizeof(bf16));
    dg = DeviceBuffer(t.g.size() * sizeof(float));
    dbeta = DeviceBuffer(t.beta.size() * sizeof(bf16));
    const std::int64_t seqs = t.dims.num_seqs > 0 ? t.dims.num_seqs : t.dims.batch;
    dh0 = DeviceBuffer(static_cast<std::size_t>(seqs * t.dims.v_heads * kMmaDim * kMmaDim) * 4);
    Expected<std::size_t> bytes = mma_backward_workspace_bytes(member, t.dims);
    check_status(bytes ? Status{} : Status{bytes.error()}, "backward workspace");
    ws = DeviceBuffer(*bytes);
    MmaBackwardTensors bt;
    bt.fwd.q = q.ptr;
    bt.fwd.k = k.ptr;
    bt.fwd.v = v.ptr;
    bt.fwd.g = g.as<float>();
    bt.fwd.beta = beta.ptr;
    bt.fwd.h0 = h0.as<float>();
    bt.fwd.cu_seqlens = cu.as<std::int64_t>();
    bt.d_o = d_o.ptr;
    bt.dht = dht.as<float>();
    bt.dq = dq.ptr;
    bt.dk = dk.ptr;
    bt.dv = dv.ptr;
    bt.dg = dg.as<float>();
    bt.dbeta = dbeta.ptr;
    bt.dh0 = dh0.as<float>();
    Expected<MmaBackwardParams> p =
        mma_backward_params(member, t.dims, scale, layout, bt, ws.ptr, ws.bytes);
    check_status(p ? Status{} : Status{p.error()}, "backward params");
    params = *p;
  }

  void poison() {
    for (DeviceBuffer* b : {&dq, &dk, &dv, &dg, &dbeta, &dh0, &ws})
      if (b->bytes > 0) CHECK_CUDA(cudaMemset(b->ptr, 0xff, b->bytes));
  }

  void run(int tile, StageTimes* times = nullptr) {
    check_status(mma_backward(member, params, tile, nullptr, times), "mma_backward");
    CHECK_CUDA(cudaGetLastError());
  }

  HostGradients fetch() const {
    CHECK_CUDA(cudaDeviceSynchronize());
    HostGradients h;
    const auto get = [](auto& dst, const DeviceBuffer& src) {
      dst.resize(src.bytes / sizeof(dst[0]));
      if (src.bytes > 0)
        CHECK_CUDA(cudaMemcpy(dst.data(), src.ptr, src.bytes, cudaMemcpyDeviceToHost));
    };
    get(h.dq, dq);
    get(h.dk, dk);
    get(h.dv, dv);
    get(h.dg, dg);
    get(h.dbeta, dbeta);
    get(h.dh0, dh0);
    return h;
  }
};

bool same_gradients(const HostGradients& a, const HostGradients& b) {
  return same_bits(a.dq, b.dq) && same_bits(a.dk, b.dk) && same_bits(a.dv, b.dv) &&
         same_bits(a.dg, b.dg) && same_bits(a.dbeta, b.dbeta) && same_bits(a.dh0, b.dh0);
}

/// An accuracy case's inputs and cotangents in the kernels' dtypes (mma_spec's problem).
std::pair<Problem, Cotangents> backward_problem(Member member, std::vector<std::int64_t> lengths,
                                                std::int64_t h, std::int64_t hv,
                                                std::uint64_t seed) {
  const testing::Case c = testing::make_case(member, mma_spec(std::move(lengths), h, hv, seed));
  return {testing::kernel_inputs(c.problem), kernel_cotangents(c.cot)};
}

Row backward_accuracy_case(Member member, const std::string& label,
                           std::vector<std::int64_t> lengths, std::int64_t h, std::int64_t hv,
                           std::uint64_t seed, int determinism_runs) {
  const auto [p, cot] = backward_problem(member, std::move(lengths), h, hv, seed);
  BackwardCase bc(member, host_tensors(p), host_cotangents(cot), static_cast<float>(p.scale),
                  p.layout);
  bc.poison();
  bc.run(32);
  const HostGradients narrow = bc.fetch();
  bc.poison();
  bc.run(64);
  const HostGradients wide = bc.fetch();
  Expected<BackwardExpectation> ex =
      h == hv ? expect_backward_by_head(member, p, cot) : expect_backward(member, p, cot);
  check_status(ex ? Status{} : Status{ex.error()}, "backward reference");
  const BackwardJudgement j = judge_backward(narrow, *ex);
  const bool tiles_agree = same_gradients(narrow, wide);
  bool deterministic = true;
  for (int r = 1; r < determinism_runs; ++r) {
    bc.poison();
    bc.run(32);
    deterministic = deterministic && same_gradients(narrow, bc.fetch());
  }
  Row row{label, j.describe(), j.pass() && tiles_agree && deterministic};
  row.result += tiles_agree ? "; tiles 32/64 bitwise equal" : "; tiles 32/64 DIFFER";
  if (determinism_runs > 1)
    row.result += deterministic ? "; " + std::to_string(determinism_runs) + " runs bitwise equal"
                                : "; runs DIFFER";
  std::printf("backward accuracy %-28s %s\n", label.c_str(), row.result.c_str());
  std::fflush(stdout);
  return row;
}

/// The recomputing backward of one case with the wgmma passes (the state pass's and the dH
/// scan's, MmaForwardParams::state_wgmma and MmaBackwardParams::scan_wgmma) against the fp64
/// reference, 3 runs bitwise equal, and its gradients against the mma.sync passes' (reported:
/// bitwise equal or not).
Row wgmma_backward_case(Member member, const std::string& label, std::vector<std::int64_t> lengths,
                        std::int64_t h, std::int64_t hv, std::uint64_t seed) {
  const auto [p, cot] = backward_problem(member, std::move(lengths), h, hv, seed);
  BackwardCase bc(member, host_tensors(p), host_cotangents(cot), static_cast<float>(p.scale),
                  p.layout);
  const auto run = [&](bool wg) {
    bc.params.fwd.state_wgmma = wg;
    bc.params.scan_wgmma = wg;
    bc.poison();
    bc.run(32);
    return bc.fetch();
  };
  const HostGradients sync = run(false);
  const HostGradients wg = run(true);
  bool deterministic = true;
  for (int r = 1; r < 3; ++r) deterministic = deterministic && same_gradients(wg, run(true));
  Expected<BackwardExpectation> ex =
      h == hv ? expect_backward_by_head(member, p, cot) : expect_backward(member, p, cot);
  check_status(ex ? Status{} : Status{ex.error()}, "backward reference");
  const BackwardJudgement j = judge_backward(wg, *ex);
  Row row{label + " (wgmma passes)", j.describe(), j.pass() && deterministic};
  row.result += deterministic ? "; 3 runs bitwise equal" : "; runs DIFFER";
  row.result += same_gradients(wg, sync) ? "; vs mma.sync: bitwise equal"
                                         : "; vs mma.sync: differs (dq " +
                                               std::to_string(rel_max_diff(wg.dq, sync.dq)) + ")";
  std::printf("backward accuracy %-40s %s\n", row.what.c_str(), row.result.c_str());
  std::fflush(stdout);
  return row;
}

std::vector<bf16> random_bf16(std::size_t n, std::uint64_t seed) {
  std::vector<bf16> x(n);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n01;
  for (bf16& y : x) y = __float2bfloat16_rn(n01(rng));
  return x;
}

}  // namespace

std::vector<Row> backward_accuracy_rows(bool small) {
  constexpr Member kSsd = Member::kSimpleGla, kDelta = Member::kDeltaNet;
  constexpr Member kGdn = Member::kGatedDeltaNet, kGla = Member::kGla, kKda = Member::kKda;
  std::vector<Row> rows;
  if (small) {
    rows.push_back(backward_accuracy_case(kSsd, "ssd B1 T64 H4", {64}, 4, 4, 21, 1));
    rows.push_back(
        backward_accuracy_case(kSsd, "ssd varlen 100+1+64 H2/HV4", {100, 1, 64}, 2, 4, 25, 1));
    rows.push_back(backward_accuracy_case(kDelta, "deltanet B1 T64 H4", {64}, 4, 4, 31, 1));
    rows.push_back(backward_accuracy_case(kDelta, "deltanet varlen 100+1+64 H2/HV4", {100, 1, 64},
                                          2, 4, 35, 1));
    rows.push_back(backward_accuracy_case(kGdn, "gdn B1 T64 H4", {64}, 4, 4, 41, 1));
    rows.push_back(
        backward_accuracy_case(kGla, "gla varlen 100+1+64 H2/HV4", {100, 1, 64}, 2, 4, 55, 1));
    rows.push_back(
        backward_accuracy_case(kKda, "kda varlen 100+1+64 H2/HV4", {100, 1, 64}, 2, 4, 65, 1));
    return rows;
  }
  rows.push_back(backward_accuracy_case(kSsd, "ssd B1 T64 H4", {64}, 4, 4, 21, 1));
  rows.push_back(backward_accuracy_case(kSsd, "ssd B1 T1000 H4", {1000}, 4, 4, 22, 1));
  rows.push_back(backward_accuracy_case(kSsd, "ssd B1 T8192 H4", {8192}, 4, 4, 23, 5));
  rows.push_back(backward_accuracy_case(kSsd, "ssd varlen 700+1+64+300+65 H2/HV4",
                                        {700, 1, 64, 300, 65}, 2, 4, 24, 1));
  rows.push_back(backward_accuracy_case(kDelta, "deltanet B1 T64 H4", {64}, 4, 4, 31, 1));
  rows.push_back(backward_accuracy_case(kDelta, "deltanet B1 T1000 H4", {1000}, 4, 4, 32, 1));
  rows.push_back(backward_accuracy_case(kDelta, "deltanet varlen 300+1+64+65 H2/HV4",
                                        {300, 1, 64, 65}, 2, 4, 34, 3));
  rows.push_back(backward_accuracy_case(kGdn, "gdn B1 T64 H4", {64}, 4, 4, 41, 1));
  rows.push_back(backward_accuracy_case(kGdn, "gdn B1 T1000 H4", {1000}, 4, 4, 42, 1));
  rows.push_back(
      backward_accuracy_case(kGdn, "gdn varlen 300+1+64+65 H2/HV4", {300, 1, 64, 65}, 2, 4, 44, 3));
  rows.push_back(backward_accuracy_case(kGla, "gla B1 T64 H4", {64}, 4, 4, 51, 1));
  rows.push_back(backward_accuracy_case(kGla, "gla B1 T1000 H4", {1000}, 4, 4, 52, 1));
  rows.push_back(
      backward_accuracy_case(kGla, "gla varlen 300+1+64+65 H2/HV4", {300, 1, 64, 65}, 2, 4, 54, 3));
  rows.push_back(backward_accuracy_case(kKda, "kda B1 T64 H4", {64}, 4, 4, 61, 1));
  rows.push_back(backward_accuracy_case(kKda, "kda B1 T1000 H4", {1000}, 4, 4, 62, 1));
  rows.push_back(
      backward_accuracy_case(kKda, "kda varlen 300+1+64+65 H2/HV4", {300, 1, 64, 65}, 2, 4, 64, 3));
  return rows;
}

std::vector<Row> wgmma_backward_rows() {
  constexpr Member kDelta = Member::kDeltaNet, kGdn = Member::kGatedDeltaNet;
  std::vector<Row> rows;
  rows.push_back(wgmma_backward_case(kDelta, "deltanet B1 T1000 H4", {1000}, 4, 4, 32));
  rows.push_back(wgmma_backward_case(kGdn, "gdn B1 T64 H4", {64}, 4, 4, 41));
  rows.push_back(wgmma_backward_case(kGdn, "gdn B1 T1000 H4", {1000}, 4, 4, 42));
  rows.push_back(
      wgmma_backward_case(kGdn, "gdn varlen 300+1+64+65 H2/HV4", {300, 1, 64, 65}, 2, 4, 44));
  return rows;
}

void time_wgmma_backward(Member member, std::int64_t b, std::int64_t t, std::int64_t h, int warmup,
                         int reps) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(kMmaDim));
  HostTensors x = random_inputs(b, t, h, 77 + b, gate_width(traits(member).gate, kMmaDim));
  if (traits(member).gate == GateKind::kNone) x.g.clear();
  HostCotangents hc{random_bf16(x.v.size(), 91 + b), {}};
  BackwardCase bc(member, x, hc, scale, StateLayout::kKV);
  std::printf("backward timing %s B%lld T%lld H%lld D128 (tile 32, recomputing):", label_of(member),
              static_cast<long long>(b), static_cast<long long>(t), static_cast<long long>(h));
  for (const bool wg : {false, true}) {
    bc.params.fwd.state_wgmma = wg;
    bc.params.scan_wgmma = wg;
    bc.poison();
    const double ms = median_ms([&] { bc.run(32); }, warmup, reps);
    const auto stages = median_stages([&](StageTimes& st) { bc.run(32, &st); }, reps, "");
    std::printf(" %s %.3f ms (", wg ? "wgmma" : "mma.sync", ms);
    for (const auto& [stage, m] : stages) std::printf(" %s %.3f", stage.c_str(), m);
    std::printf(" );");
  }
  std::printf("\n");
  std::fflush(stdout);
}

BackwardTiming time_backward(Member member, std::int64_t b, std::int64_t t, std::int64_t h,
                             int warmup, int reps) {
  BackwardTiming tm;
  char shape[64];  // (snprintf: GCC 12's -Wrestrict misfires on "B" + std::to_string(b) + ...)
  std::snprintf(shape, sizeof shape, "%s B%lld T%lld H%lld D128", label_of(member),
                static_cast<long long>(b), static_cast<long long>(t), static_cast<long long>(h));
  tm.shape = shape;
  const float scale = 1.0f / std::sqrt(static_cast<float>(kMmaDim));
  HostTensors x = random_inputs(b, t, h, 77 + b, gate_width(traits(member).gate, kMmaDim));
  if (traits(member).gate == GateKind::kNone) x.g.clear();
  if (!traits(member).delta_rule) x.beta.clear();
  HostCotangents hc{random_bf16(x.v.size(), 91 + b), {}};
  BackwardCase bc(member, x, hc, scale, StateLayout::kKV);
  // The forward on the same inputs (its own workspace, o and final state).
  DeviceBuffer o(x.v.size() * sizeof(bf16)), ht(bc.dh0.bytes);
  Expected<std::size_t> fbytes = mma_forward_workspace_bytes(member, x.dims);
  check_status(fbytes ? Status{} : Status{fbytes.error()}, "forward workspace");
  DeviceBuffer fws(*fbytes);
  const MmaForwardTensors ft{bc.q.ptr,          bc.k.ptr, bc.v.ptr, bc.g.as<float>(), bc.beta.ptr,
                             bc.h0.as<float>(), nullptr,  o.ptr,    ht.as<float>()};
  Expected<MmaForwardParams> fp =
      mma_forward_params(member, x.dims, scale, StateLayout::kKV, ft, fws.ptr, fws.bytes);
  check_status(fp ? Status{} : Status{fp.error()}, "forward params");
  tm.tile = default_value_tile(*fp, multiprocessors());
  const int other = tm.tile == 32 ? 64 : 32;
  const auto fwd_bwd = [&](int tile) {
    check_status(mma_forward(member, *fp, tile, nullptr), "mma_forward");
    bc.run(tile);
  };
  tm.mma = median_ms([&] { fwd_bwd(tm.tile); }, warmup, reps);
  tm.mma_other = median_ms([&] { fwd_bwd(other); }, warmup, reps);
  tm.mma_bwd = median_ms([&] { bc.run(tm.tile); }, warmup, reps);
  tm.stages = median_stages(
      [&](StageTimes& st) {
        check_status(mma_forward(member, *fp, tm.tile, nullptr, &st), "mma_forward (timed)");
      },
      reps, "fwd ");
  const auto bwd_stages =
      median_stages([&](StageTimes& st) { bc.run(tm.tile, &st); }, reps, "bwd ");
  tm.stages.insert(tm.stages.end(), bwd_stages.begin(), bwd_stages.end());
  bc.poison();
  bc.run(tm.tile);
  const HostGradients mine = bc.fetch();

  // A training step: the forward keeps its pieces in the kept part of the backward's workspace
  // (mma_kept_forward_params) and the backward skips its recompute; its gradients must be the
  // recomputing backward's bit for bit.
  DeviceBuffer o_kept(o.bytes), ht_kept(ht.bytes);
  MmaForwardTensors kept_t = ft;
  kept_t.o = o_kept.ptr;
  kept_t.final_state = ht_kept.as<float>();
  Expected<MmaForwardParams> kept_or = mma_kept_forward_params(
      member, x.dims, scale, StateLayout::kKV, kept_t, bc.ws.ptr, bc.ws.bytes);
  check_status(kept_or ? Status{} : Status{kept_or.error()}, "kept forward params");
  const MmaForwardParams kept = *kept_or;
  const auto step = [&] {
    check_status(mma_forward(member, kept, tm.tile, nullptr), "mma_forward (kept)");
    bc.params.recompute = false;
    bc.run(tm.tile);
    bc.params.recompute = true;
  };
  tm.mma_step = median_ms(step, warmup, reps);
  bc.poison();
  step();
  tm.step_equal = same_gradients(mine, bc.fetch());

  // kcv's CUDA-core forward and backward on the same device buffers.
  gpu::Config cfg;
  cfg.member = member;
  cfg.scale = scale;
  const gpu::Inputs in{bc.q.ptr,    bc.k.ptr,          bc.v.ptr, bc.g.ptr,
                       bc.beta.ptr, bc.h0.as<float>(), nullptr,  nullptr};
  DeviceBuffer o_ref(o.bytes), h_ref(ht.bytes), dq(bc.dq.bytes), dk(bc.dk.bytes), dv(bc.dv.bytes),
      dg(bc.dg.bytes), dbeta(bc.dbeta.bytes), dh0(bc.dh0.bytes);
  Expected<std::size_t> kf = gpu::forward_workspace_bytes(x.dims, cfg);
  Expected<std::size_t> kb = gpu::backward_workspace_bytes(x.dims, cfg);
  check_status(kf && kb ? Status{} : Status{kf ? kb.error() : kf.error()}, "kcv workspace");
  DeviceBuffer kws(std::max(*kf, *kb));
  const gpu::ForwardOutputs out{o_ref.ptr, h_ref.as<float>()};
  const gpu::Cotangents cot{bc.d_o.ptr, nullptr};
  const gpu::Gradients grads{dq.ptr, dk.ptr, dv.ptr, dg.ptr, dbeta.ptr, dh0.as<float>()};
  tm.kcv = median_ms(
      [&] {
        check_status(gpu::forward(x.dims, cfg, in, out, kws.ptr, kws.bytes, nullptr), "kcv fwd");
        check_status(gpu::backward(x.dims, cfg, in, cot, grads, kws.ptr, kws.bytes, nullptr),
                     "kcv bwd");
      },
      std::min(warmup, 2), reps);
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<bf16> ref(mine.dq.size());
  CHECK_CUDA(cudaMemcpy(ref.data(), dq.ptr, dq.bytes, cudaMemcpyDeviceToHost));
  tm.diff_dq = rel_max_diff(mine.dq, ref);
  CHECK_CUDA(cudaMemcpy(ref.data(), dk.ptr, dk.bytes, cudaMemcpyDeviceToHost));
  tm.diff_dk = rel_max_diff(mine.dk, ref);
  ref.resize(mine.dv.size());
  CHECK_CUDA(cudaMemcpy(ref.data(), dv.ptr, dv.bytes, cudaMemcpyDeviceToHost));
  tm.diff_dv = rel_max_diff(mine.dv, ref);
  std::printf(
      "backward timing %s: mma fwd+bwd tile %d %.3f ms (bwd %.3f ms), tile %d %.3f ms, "
      "kcv CUDA-core fwd+bwd %.3f ms; max|d_mma - d_kcv|/RMS dq %.3g dk %.3g dv %.3g; "
      "training step (forward keeps its pieces, no recompute) %.3f ms, gradients %s\n",
      tm.shape.c_str(), tm.tile, tm.mma, tm.mma_bwd, other, tm.mma_other, tm.kcv, tm.diff_dq,
      tm.diff_dk, tm.diff_dv, tm.mma_step,
      tm.step_equal ? "bitwise equal to the recomputing backward's" : "DIFFER");
  std::printf("stage profile %s (tile %d, median ms of %d timed calls):", tm.shape.c_str(), tm.tile,
              reps);
  for (const auto& [stage, ms] : tm.stages) std::printf(" %s %.3f;", stage.c_str(), ms);
  std::printf("\n");
  std::fflush(stdout);
  return tm;
}

}  // namespace kcv::glr::dev
