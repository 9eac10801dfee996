// File: tests/unit/gates/res_test.cpp
// RES-01 on audited calls (guards, sentinel, inputs, results that move with guard contents) and
// RES-02 on hand-built resource reports (registers, spills, shared memory, TMEM columns, leaks).
#include <gtest/gtest.h>

#include "gates/judge_common.hpp"
#include "unit/gates/synthetic.hpp"

namespace kcv {
namespace {

using testing::offset_by;
using testing::Synthetic;

const std::vector<double> kY = {1.0, -2.5, 0.75, 1024.0};
const std::vector<double> kTau = {0x1p-10, 0x1p-9, 0x1p-12, 0x1p-3};

Synthetic three_calls() {
  Synthetic s;
  s.with_oracle(DType::kF32, kY, kTau);
  for (int k = 0; k < 3; ++k) s.with_call(offset_by(kY, kTau, 0.25));
  return s;
}

TEST(Res01Judge, PassesCleanRepeatedCalls) {
  const GateResult r = three_calls().judge(GateId::kRes01);
  EXPECT_EQ(r.verdict, Verdict::kPass) << r.evidence.summary;
}

TEST(Res01Judge, RejectsWritePastTheEnd) {
  Synthetic s = three_calls();
  s.outcome.calls[1].guards_intact = false;
  s.outcome.calls[1].first_guard_violation = 16;
  const GateResult r = s.judge(GateId::kRes01);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.finding, Finding::kWrittenOutside);
  EXPECT_NE(r.evidence.summary.find("call 1: wrote outside its buffers"), std::string::npos) << r.evidence.summary;
}

TEST(Res01Judge, RejectsUnwrittenOutputElement) {
  Synthetic s = three_calls();
  s.outcome.calls[0].all_written = false;
  s.outcome.calls[0].unwritten_output = 0;
  s.outcome.calls[0].first_unwritten = 3;
  const GateResult r = s.judge(GateId::kRes01);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_NE(r.evidence.summary.find("out[3] unwritten"), std::string::npos) << r.evidence.summary;
}

TEST(Res01Judge, RejectsInputMutation) {
  Synthetic s = three_calls();
  s.outcome.calls[2].inputs_unchanged = false;
  s.outcome.calls[2].mutated_input = 0;
  EXPECT_EQ(s.judge(GateId::kRes01).verdict, Verdict::kFail);
}

TEST(Res01Judge, CrashAndTimeoutFailWithTheirStatus) {
  for (CallStatus st : {CallStatus::kCrash, CallStatus::kTimeout, CallStatus::kException, CallStatus::kKernelError}) {
    Synthetic s = three_calls();
    s.outcome.calls[1].status = st;
    s.outcome.calls[1].message = "boom";
    const GateResult r = s.judge(GateId::kRes01);
    EXPECT_EQ(r.verdict, Verdict::kFail);
    EXPECT_NE(r.evidence.summary.find(std::string(call_status_name(st))), std::string::npos);
  }
}

TEST(Res01Judge, ResultsMovingWithGuardContentsFail) {
  Synthetic s = three_calls();
  s.outcome.calls[2] = testing::call_of(DType::kF32, offset_by(kY, kTau, 2.5));  // 2.5 tau from call 0
  const GateResult r = s.judge(GateId::kRes01);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.finding, Finding::kReadOutside);
  EXPECT_NE(r.evidence.summary.find("out-of-bounds read influences results"), std::string::npos);
}

// A last-bit difference is nondeterminism, ORD-02's finding, not a read outside the inputs.
TEST(Res01Judge, LastBitDifferencesAreLeftToOrd02) {
  Synthetic s = three_calls();
  HostTensor& t = s.outcome.calls[2].outputs[0];
  t.set_bits_at(0, t.bits_at(0) + 1);  // one ulp: inside tau
  EXPECT_EQ(s.judge(GateId::kRes01).verdict, Verdict::kPass);
}

TEST(Res01Judge, NonDeterministicContractAllowsTwiceTau) {
  Synthetic s;
  s.contract.deterministic = false;
  s.with_oracle(DType::kF32, kY, kTau);
  s.with_call(offset_by(kY, kTau, 0.75)).with_call(offset_by(kY, kTau, -0.75));
  EXPECT_EQ(s.judge(GateId::kRes01).verdict, Verdict::kPass);
  s.outcome.calls.push_back(testing::call_of(DType::kF32, offset_by(kY, kTau, -1.5)));
  EXPECT_EQ(s.judge(GateId::kRes01).verdict, Verdict::kFail);  // 2.25 tau from call 0
}

KernelResources kernel(std::string name) {
  KernelResources k;
  k.name = std::move(name);
  k.arch = "sm_100a";
  k.registers = 64;
  return k;
}

ResourceReport report_of(std::vector<KernelResources> ks) {
  ResourceReport r;
  r.source = "synthetic";
  r.kernels = std::move(ks);
  return r;
}

TEST(Res02Judge, FullTensorMemoryWithDeallocPasses) {
  KernelResources k = kernel("gemm512");
  k.tmem_alloc_columns = {512};
  k.tmem_deallocs = 1;
  const GateResult r = judge_resources(report_of({k}), Contract{});
  EXPECT_EQ(r.verdict, Verdict::kPass) << r.evidence.summary;
  EXPECT_EQ(r.gate, GateId::kRes02);
}

TEST(Res02Judge, Rejects544TensorMemoryColumns) {
  KernelResources k = kernel("gemm544");
  k.tmem_alloc_columns = {544};
  k.tmem_deallocs = 1;
  const GateResult r = judge_resources(report_of({k}), Contract{});
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_NE(r.evidence.summary.find("gemm544"), std::string::npos);
  EXPECT_NE(r.evidence.summary.find("544"), std::string::npos) << r.evidence.summary;
}

TEST(Res02Judge, RejectsAllocationsSummingPast512) {
  KernelResources k = kernel("two_allocs");
  k.tmem_alloc_columns = {512, 32};
  k.tmem_deallocs = 2;
  const GateResult r = judge_resources(report_of({k}), Contract{});
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_NE(r.evidence.summary.find("544 TMEM columns"), std::string::npos) << r.evidence.summary;
}

TEST(Res02Judge, RejectsTensorMemoryLeak) {
  KernelResources k = kernel("leaky");
  k.tmem_alloc_columns = {128};
  const GateResult r = judge_resources(report_of({k}), Contract{});
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_NE(r.evidence.summary.find("leak"), std::string::npos) << r.evidence.summary;
}

TEST(Res02Judge, DeclaredColumnBudgetIsEnforced) {
  KernelResources k = kernel("gemm256");
  k.tmem_alloc_columns = {256};
  k.tmem_deallocs = 1;
  Contract c;
  c.budgets.tmem_columns = 128;
  EXPECT_EQ(judge_resources(report_of({k}), c).verdict, Verdict::kFail);
  c.budgets.tmem_columns = 256;
  EXPECT_EQ(judge_resources(report_of({k}), c).verdict, Verdict::kPass);
}

TEST(Res02Judge, SpillsOverBudgetFail) {
  KernelResources k = kernel("spiller");
  k.spill_store_bytes = 24;
  k.spill_load_bytes = 24;
  Contract c;
  EXPECT_EQ(judge_resources(report_of({k}), c).verdict, Verdict::kPass);  // no spill budget declared
  c.budgets.spill_bytes = 0;
  const GateResult r = judge_resources(report_of({k}), c);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_NE(r.evidence.summary.find("24 spill bytes"), std::string::npos) << r.evidence.summary;
  c.budgets.spill_bytes = 24;
  EXPECT_EQ(judge_resources(report_of({k}), c).verdict, Verdict::kPass);
}

TEST(Res02Judge, SpillBudgetIsUndecidedWithoutAPtxasLog) {
  Contract c;
  c.budgets.spill_bytes = 0;
  for (ResourceFormat f : {ResourceFormat::kCuobjdump, ResourceFormat::kPtx}) {
    ResourceReport report = report_of({kernel("unknown_spills")});
    report.format = f;
    const GateResult r = judge_resources(report, c);
    EXPECT_EQ(r.verdict, Verdict::kError) << r.evidence.summary;
  }
}

TEST(Res02Judge, StackFrameOverBudgetFails) {
  // The tensor-core GLR kernels once kept a 16×64 accumulator in a 128-byte stack frame with no
  // spill at all: only the stack budget sees that.
  KernelResources k = kernel("local_array");
  k.stack_bytes = 128;
  Contract c;
  c.budgets.spill_bytes = 0;
  EXPECT_EQ(judge_resources(report_of({k}), c).verdict, Verdict::kPass);  // no stack budget declared
  c.budgets.stack_bytes = 0;
  const GateResult r = judge_resources(report_of({k}), c);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_NE(r.evidence.summary.find("128 stack frame bytes"), std::string::npos) << r.evidence.summary;
  k.stack_bytes = 0;
  EXPECT_EQ(judge_resources(report_of({k}), c).verdict, Verdict::kPass);
  c.budgets.spill_bytes.reset();  // cuobjdump has no spill counts (undecided when bounded)
  ResourceReport cuobjdump = report_of({k});
  cuobjdump.format = ResourceFormat::kCuobjdump;  // cuobjdump's STACK is the same figure
  EXPECT_EQ(judge_resources(cuobjdump, c).verdict, Verdict::kPass);
  ResourceReport ptx = report_of({k});
  ptx.format = ResourceFormat::kPtx;  // PTX has no stack frame
  EXPECT_EQ(judge_resources(ptx, c).verdict, Verdict::kError);
}

TEST(Res02Judge, RegistersAndSharedAgainstBudgetOrArchLimit) {
  const ArchLimits lim = arch_limits("sm_90a");
  KernelResources k = kernel("big");
  k.arch = "sm_90a";
  k.registers = lim.max_registers_per_thread + 1;
  EXPECT_EQ(judge_resources(report_of({k}), Contract{}).verdict, Verdict::kFail);
  k.registers = 128;
  Contract c;
  c.budgets.registers_per_thread = 96;
  EXPECT_EQ(judge_resources(report_of({k}), c).verdict, Verdict::kFail);
  k.shared_bytes = lim.max_shared_per_block + 1;
  c.budgets.registers_per_thread.reset();
  const GateResult r = judge_resources(report_of({k}), c);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_NE(r.evidence.summary.find("kernel big"), std::string::npos);
}

TEST(Res02Judge, ThreadsChecked) {
  KernelResources k = kernel("wide");
  k.max_threads = 2048;
  EXPECT_EQ(judge_resources(report_of({k}), Contract{}).verdict, Verdict::kFail);
}

TEST(Res02Judge, EmptyReportIsNotApplicableAndDynamicAllocIsUndecided) {
  const GateResult none = judge_resources(report_of({}), Contract{});
  EXPECT_EQ(none.verdict, Verdict::kNotApplicable);
  EXPECT_FALSE(none.reason.empty());
  KernelResources k = kernel("dyn");
  k.tmem_dynamic_alloc = true;
  const GateResult dyn = judge_resources(report_of({k}), Contract{});
  EXPECT_EQ(dyn.verdict, Verdict::kError);
  EXPECT_FALSE(dyn.reason.empty());
}

}  // namespace
}  // namespace kcv
