// File: glr/verify/tests/mma_pipeline_test.cpp
// The tensor-core kernels of glr/dev through kcv's pipeline on the CPU: libkcv_glr_mma_emulated.so
// runs them in their host emulation, each call adapted to their K = V = 128 and dtypes by
// glr/check/mma_adapter.hpp (zero padding, widened gates, explicit int64 cu_seqlens, fp32 β
// rounded to bf16). What holds on the small case list, every member the kernels have:
//  - under the bf16 grade every output meets the pipeline oracle's bound: o and ht with the
//    forward's declared-rounding σ, the gradients with the backward's (declared_backward_sigma,
//    precision-contract.md §6; oracle_test.cpp checks the oracle's sliced σ against it); fp32-β
//    cases included. Under the fp32 grade o and ht do not meet their bound;
//  - `kcv verify --grade bf16` passes CMP-01, ORD-02 and EXC-01 for all six members:
//  a
//    NaN in v reaches what the recurrence says, since the diagonal block of every product whose A
//    operand is triangular falls back to CUDA cores when its B rows are not finite
//    (mma_acc_triangular). dL = Y·Tᵀ, whose triangle is in B, is not covered: its NaN reaches dk
//    and dβ inside the poisoned token's chunk, which EXC-01 sanctions for the delta rule (the
//    chunk form's alternative);
//  - a NaN in v at the last row of a chunk (a full chunk, a sequence's partial final chunk, under
//    varlen) passes EXC-01 for SSD and GDN: SSD's dg leaves out the pairs of the gauge identity
//    that cancel exactly (as the chunked reference does), so dg stays finite before the NaN;
//  - the library has no decode op.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "glr/verify/internal.hpp"
#include "glr/verify/tests/pipeline_support.hpp"
#include "kcv/glr/chunked.hpp"
#include "kcv/probe.hpp"

namespace kcv::glr {
namespace {

using pipeline_test::result_of;
using pipeline_test::small;

constexpr Member kMmaMembers[] = {Member::kLinearAttention, Member::kSimpleGla, Member::kDeltaNet,
                                  Member::kGatedDeltaNet,   Member::kGla,       Member::kKda};

std::unique_ptr<Candidate> load(const std::string& kernel) {
  return pipeline_test::load(KCV_GLR_MMA_EMULATED, kernel);
}

/// One grade's report, unshrunk (the failures asserted below need no shrinking).
VerifyReport verify_one(Candidate& candidate, Grade grade, std::vector<GateId> gates = {}) {
  auto executor = make_forked_executor();
  VerifyOptions v;
  v.gates = std::move(gates);
  v.shrink = false;
  auto reports = verify(candidate, *executor, v, small({grade}));
  EXPECT_TRUE(reports.has_value()) << reports.error().to_string();
  EXPECT_EQ(reports->size(), 1u);
  return reports->front();
}

/// Worst |y − y*| / tau of one output of one call (NaN where tau is 0 and y ≠ y*: infinity).
double worst_ratio(const HostTensor& y, const std::vector<double>& ref,
                   const std::vector<double>& tau) {
  double worst = 0.0;
  for (std::int64_t i = 0; i < y.numel(); ++i) {
    const double e = std::abs(y.value_at(i) - ref[static_cast<std::size_t>(i)]);
    const double r = e / tau[static_cast<std::size_t>(i)];
    if (!(r <= worst)) worst = std::isnan(r) ? INFINITY : r;
  }
  return worst;
}

/// The worst ratios of one CMP-01 probe against the pipeline oracle's tau under `grade`.
struct Ratios {
  double forward = 0.0;   ///< max over o, ht
  double backward = 0.0;  ///< max over the gradients
};

Ratios ratios(Candidate& candidate, Grade grade, const Probe& probe) {
  const GlrOptions o = small({grade});
  GlrOracle oracle(o);
  auto executor = make_in_process_executor();
  ExecutorRunner runner(candidate, *executor, std::nullopt, call_policy(o));
  auto inputs = oracle.make_inputs(probe);
  EXPECT_TRUE(inputs.has_value()) << inputs.error().to_string();
  auto ref = oracle.evaluate(probe, *inputs, candidate.contract());
  EXPECT_TRUE(ref.has_value()) << ref.error().to_string();
  const ProbeOutcome out = runner.run(probe, *inputs, candidate.contract());
  EXPECT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls.front().status, CallStatus::kOk) << out.calls.front().message;
  const std::vector<HostTensor>& y = out.calls.front().outputs;
  Ratios r;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double worst = worst_ratio(y[i], (*ref)->outputs[i].value, (*ref)->outputs[i].tau);
    double& slot = i < 2 ? r.forward : r.backward;  // o, ht, then the gradients
    slot = std::max(slot, worst);
  }
  return r;
}

std::vector<Probe> cmp_probes(Candidate& candidate, Member m, Grade grade) {
  GlrProbes source(m, grade, small({grade}));
  return source.plan(GateId::kCmp01, candidate.contract(), VerifyOptions{}.seed);
}

class TensorCoreEmulation : public ::testing::TestWithParam<Member> {};

TEST_P(TensorCoreEmulation, MeetsTheBf16GradeOnEveryOutputOfTheSmallCases) {
  auto candidate = load(op_name(GetParam()));
  ASSERT_NE(candidate, nullptr);
  const std::vector<Probe> probes = cmp_probes(*candidate, GetParam(), Grade::kBf16);
  ASSERT_EQ(probes.size(), 7u);
  for (const Probe& p : probes) {
    const Ratios r = ratios(*candidate, Grade::kBf16, p);
    EXPECT_LE(r.forward, 1.0) << p.label << ": o, ht";
    EXPECT_LE(r.backward, 1.0) << p.label << ": the gradients";
    std::printf("%-60s o, ht %.3f  gradients %.3f\n", p.label.c_str(), r.forward, r.backward);
  }
}

TEST_P(TensorCoreEmulation, PassesCmp01Ord02AndExc01UnderTheBf16Grade) {
  auto candidate = load(op_name(GetParam()));
  ASSERT_NE(candidate, nullptr);
  const VerifyReport r = verify_one(*candidate, Grade::kBf16);
  EXPECT_EQ(r.kernel, op_name(GetParam()) + " [bf16]");
  EXPECT_EQ(result_of(r, GateId::kCmp01).verdict, Verdict::kPass)
      << result_of(r, GateId::kCmp01).evidence.summary;
  const GateResult& ord = result_of(r, GateId::kOrd02);
  EXPECT_EQ(ord.verdict, Verdict::kPass) << ord.evidence.summary;
  EXPECT_GT(ord.probes_run, 0);
  const GateResult& exc = result_of(r, GateId::kExc01);
  EXPECT_EQ(exc.verdict, Verdict::kPass) << exc.evidence.summary;
  EXPECT_EQ(result_of(r, GateId::kRes02).verdict, Verdict::kNotApplicable);
}

INSTANTIATE_TEST_SUITE_P(Members, TensorCoreEmulation, ::testing::ValuesIn(kMmaMembers),
                         [](const auto& info) { return std::string(name(info.param)); });

/// An EXC-01 probe of `member` (ssd or gdn) at the shape kcv's shrinker reached for SSD's dg
/// (T = 90, H = 2, HV = 4, K = 1, V = 64, varlen with int64 cu_seqlens, moderate decay, the
/// bf16 grade): sequences of lengths `segments`, a NaN in v at token `t`, value head 3, column 63.
Probe nan_in_v_probe(Member member, const std::vector<std::int64_t>& segments, std::int64_t t) {
  const auto spec = [](std::string& out, const char* dtype) {
    if (out.back() != '[') out += ',';
    out += R"({"dtype":")";
    out += dtype;
    out += R"(","dist":"normal","layout":{"kind":"contiguous","step":2,"offset":0,"pad":0}})";
  };
  std::string token = R"({"gate":"EXC-01","label":"NaN in v at the last row of a chunk",)";
  token += R"("seed":16706448095445883447,"sizes":{"H":2,"HV":4,"K":1,"N":)";
  token += std::to_string(segments.size());
  token += R"(,"T":90,"V":64},"inputs":[)";
  for (const char* dtype : {"bf16", "bf16", "bf16", "f32"}) spec(token, dtype);  // q, k, v, g
  if (member == Member::kGatedDeltaNet) spec(token, "bf16");                     // beta
  for (const char* dtype : {"f32", "bf16", "f32", "i64"}) spec(token, dtype);    // h0, do, dht, cu
  token += R"(],"injections":[{"input":2,"index":)";
  token += std::to_string((t * 4 + 3) * 64 + 63);
  token += R"(,"value":"nan"}],"repetitions":1,"shift_addresses":false,"launch_configs":[],)";
  token += R"("concurrency":1,"randomize_guards":false,"segments":[)";
  for (std::size_t n = 0; n < segments.size(); ++n) {
    if (n > 0) token += ',';
    token += std::to_string(segments[n]);
  }
  token += R"(],"tags":{"decay":"moderate","grade":"bf16","layout":"kv","member":")";
  token += name(member);
  token += R"(","packing":"varlen-i64"}})";
  Expected<Probe> probe = probe_from_token(token);
  EXPECT_TRUE(probe.has_value()) << probe.error().to_string() << "\n" << token;
  return probe ? *probe : Probe{};
}

class TensorCoreEmulationNaNAtLastRow : public ::testing::TestWithParam<Member> {};

// A NaN in v at the last row t* of a chunk: the recurrence keeps dg finite at every token up to
// t* (∂L/∂g_t reads the states before t only), and so does the chunked reference, which leaves out
// the two pairs that cancel exactly (the last row's inter-chunk k·dk against its term through
// G_last, and the Gram VJP's diagonal). SSD's and GDN's dg must be finite there too: a full chunk
// (t* = 63), the partial final chunk of a sequence (t* = 89), and under varlen the partial chunk
// that ends the first of two sequences (t* = 69) and the second's (t* = 89).
TEST_P(TensorCoreEmulationNaNAtLastRow, PassesExc01) {
  auto candidate = load(op_name(GetParam()));
  ASSERT_NE(candidate, nullptr);
  struct Where {
    std::vector<std::int64_t> segments;
    std::int64_t t;
  };
  for (const Where& w :
       {Where{{90}, 63}, Where{{90}, 89}, Where{{70, 20}, 69}, Where{{70, 20}, 89}}) {
    const Probe probe = nan_in_v_probe(GetParam(), w.segments, w.t);
    auto executor = make_in_process_executor();
    const GateResult r =
        run_probe(*candidate, *executor, probe, candidate->contract(), small({Grade::kBf16}));
    EXPECT_EQ(r.verdict, Verdict::kPass)
        << name(GetParam()) << ", " << w.segments.size() << " sequence(s), NaN at token " << w.t
        << ": " << r.evidence.summary;
  }
}

INSTANTIATE_TEST_SUITE_P(ScalarGate, TensorCoreEmulationNaNAtLastRow,
                         ::testing::Values(Member::kSimpleGla, Member::kGatedDeltaNet),
                         [](const auto& info) { return std::string(name(info.param)); });

// The grade matters: the kernels round what the bf16 grade declares, so under the fp32 grade
// CMP-01 fails and o, ht are over their bound on every small case (at most 1 under bf16 above).
TEST(TensorCoreEmulationGrade, TheFp32GradeFailsCmp01OnTheForwardOutputs) {
  auto candidate = load("glr.gdn");
  ASSERT_NE(candidate, nullptr);
  const VerifyReport r = verify_one(*candidate, Grade::kFp32, {GateId::kCmp01});
  EXPECT_EQ(r.kernel, "glr.gdn [fp32]");
  const GateResult& cmp = result_of(r, GateId::kCmp01);
  EXPECT_EQ(cmp.verdict, Verdict::kFail) << cmp.evidence.summary;
  EXPECT_EQ(cmp.finding, Finding::kValueOverBound);
  for (const Probe& p : cmp_probes(*candidate, Member::kGatedDeltaNet, Grade::kFp32))
    EXPECT_GT(ratios(*candidate, Grade::kFp32, p).forward, 1.0) << p.label;
}

TEST(TensorCoreEmulationLibrary, HoldsTheSixMembersAndNoDecodeOp) {
  ASSERT_TRUE(register_ops().ok());
  for (const char* kernel : {"glr.la", "glr.ssd", "glr.deltanet", "glr.gdn", "glr.gla", "glr.kda"})
    EXPECT_TRUE(load_shared_library_candidate(KCV_GLR_MMA_EMULATED, kernel, "").has_value())
        << kernel;
  for (const char* kernel : {"glr.gdn.decode"}) {
    auto c = load_shared_library_candidate(KCV_GLR_MMA_EMULATED, kernel, "");
    ASSERT_FALSE(c.has_value()) << kernel;
    EXPECT_NE(c.error().to_string().find(kernel), std::string::npos) << c.error().to_string();
  }
}

}  // namespace
}  // namespace kcv::glr
