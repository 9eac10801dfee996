// File: tests/unit/worker/worker_audit_test.cpp
// The worker executor against the in-process executor on the same fixture kernels: a correct
// kernel gives bit-identical outputs and audit facts, and every contract breach the buffer audit
// sees (input mutation, a write past the end, an unwritten element, a rewritten view) and every
// kernel-reported failure gives the same CallStatus, flags and message across the process line.
#include <gtest/gtest.h>

#include "worker_test_util.hpp"

namespace kcv {
namespace {

using namespace kcv::testing;

struct Pair {
  CallRecord here, there;
};

Pair run_both(const std::string& kernel, const std::vector<HostTensor>& inputs,
              const CallOptions& o = call_options()) {
  auto c = load_here(kernel);
  if (!c) return {};
  Pair p;
  p.here = make_in_process_executor()->run(*c, inputs, kOut, o);
  p.there = make_worker_executor(worker_options(kernel))->run(*c, inputs, kOut, o);
  return p;
}

TEST(WorkerAudit, GoodKernelGivesTheInProcessOutputsBitForBit) {
  const Pair p = run_both("good_add", add_inputs());
  EXPECT_EQ(p.there.status, CallStatus::kOk) << p.there.message;
  expect_sums(p.there);
  expect_same(p.here, p.there);
}

TEST(WorkerAudit, PaddedBroadcastAndShiftedInputsMatchTheInProcessRun) {
  const std::vector<HostTensor> dense = add_inputs();
  HostTensor x(DType::kF32, testing::kShape, {10, 1}, 3);  // padded rows behind an offset
  HostTensor y(DType::kF32, testing::kShape, {0, 1});      // one row, broadcast
  for (int64_t i = 0; i < kN; ++i) {
    x.set_bits_at(i, dense[0].bits_at(i));
    y.set_bits_at(i, dense[1].bits_at(i % 8));
  }
  CallOptions o = call_options();
  o.address_shift = 4;
  o.randomize_guards = true;
  o.guard_seed = 11;
  const Pair p = run_both("good_add", {x, y}, o);
  EXPECT_EQ(p.there.status, CallStatus::kOk) << p.there.message;
  expect_same(p.here, p.there);
}

TEST(WorkerAudit, ReportsAMutatedInput) {
  const Pair p = run_both("add_mutate_input", add_inputs());
  EXPECT_FALSE(p.there.inputs_unchanged);
  EXPECT_EQ(p.there.mutated_input, 1);
  EXPECT_EQ(p.there.first_mutated_input_elem, 5);
  expect_same(p.here, p.there);
}

TEST(WorkerAudit, ReportsAWriteOnePastTheOutput) {
  const Pair p = run_both("add_write_past_end", add_inputs());
  EXPECT_FALSE(p.there.guards_intact);
  EXPECT_EQ(p.there.first_guard_violation, kN * static_cast<int64_t>(sizeof(float)));
  expect_same(p.here, p.there);
}

TEST(WorkerAudit, ReportsAnUnwrittenOutputElement) {
  const Pair p = run_both("add_skip_last", add_inputs());
  EXPECT_FALSE(p.there.all_written);
  EXPECT_EQ(p.there.first_unwritten, kN - 1);
  EXPECT_EQ(p.there.outputs[0].bits_at(kN - 1), p.there.sentinel);
  expect_same(p.here, p.there);
}

TEST(WorkerAudit, ReportsAKernelErrorWithItsMessage) {
  const Pair p = run_both("add_error", add_inputs());
  EXPECT_EQ(p.there.status, CallStatus::kKernelError);
  EXPECT_EQ(p.there.message, "the kernel returned 7: fixture: block size 128 unsupported");
  expect_same(p.here, p.there);
}

TEST(WorkerAudit, ReportsAnException) {
  const Pair p = run_both("add_throw", add_inputs());
  EXPECT_EQ(p.there.status, CallStatus::kException);
  EXPECT_EQ(p.there.message, "the kernel threw: fixture: thrown from add_throw");
}

TEST(WorkerAudit, ReportsARewrittenOutputView) {
  const Pair p = run_both("add_bad_shape", add_inputs());
  EXPECT_EQ(p.there.status, CallStatus::kBadOutput);
  EXPECT_EQ(p.here.message, p.there.message);
}

TEST(WorkerAudit, DoesNotCallAKernelDeclaringAnotherOutputDtype) {
  auto c = load_here("good_add");
  ASSERT_NE(c, nullptr);
  const CallRecord r =
      make_worker_executor(worker_options("good_add"))
          ->run(*c, add_inputs(), {{DType::kF16, testing::kShape}}, call_options());
  EXPECT_EQ(r.status, CallStatus::kBadOutput);
  EXPECT_EQ(r.message, "output 0: the kernel's contract declares f32, the op requires f16");
}

TEST(WorkerAudit, ConcurrentCallsRunOnOneWorkerWithTheirOwnSentinels) {
  auto c = load_here("good_add");
  ASSERT_NE(c, nullptr);
  auto w = make_worker_executor(worker_options("good_add"));
  std::vector<CallOptions> opts;
  for (uint64_t s = 1; s <= 4; ++s) opts.push_back(call_options(128, s));
  const std::vector<CallRecord> rs = w->run_concurrently(*c, add_inputs(), kOut, opts);
  ASSERT_EQ(rs.size(), 4u);
  for (std::size_t i = 0; i < rs.size(); ++i) {
    EXPECT_EQ(rs[i].status, CallStatus::kOk) << rs[i].message;
    EXPECT_EQ(rs[i].sentinel, sentinel_bits(DType::kF32, i + 1));
    expect_sums(rs[i]);
  }
  EXPECT_EQ(w->workers_started(), 1);
}

}  // namespace
}  // namespace kcv
