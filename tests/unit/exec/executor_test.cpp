// File: tests/unit/exec/executor_test.cpp
// Both executors on the fixture kernels (tests/fixtures/kernels): a correct add and kernels that
// each break the contract one way. Every test asserts the exact CallStatus and audit flags; the
// crash, hang and exit kernels run only under the forked executor, and kcv must carry on after
// them (the test process itself makes the next call).
#include "kcv/executor.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>

#include "fixtures/fixture_paths.hpp"
#include "kcv/candidate.hpp"

namespace kcv {
namespace {

using testing::fixture_path;

const Shape kShape = {4, 8};
constexpr int64_t kN = 32;

std::unique_ptr<Candidate> load(const std::string& kernel) {
  const std::string lib = fixture_path(kernel == "good_add" ? "libkcv_fixture_good.so"
                                                            : "libkcv_fixture_misbehaving.so");
  auto c = load_shared_library_candidate(lib, kernel, "");
  EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().to_string());
  return c ? std::move(*c) : nullptr;
}

// x[i] = i + 0.25 and y[i] = 2i: every sum is exact in f32.
std::vector<HostTensor> add_inputs() {
  std::vector<double> x, y;
  for (int64_t i = 0; i < kN; ++i) {
    x.push_back(static_cast<double>(i) + 0.25);
    y.push_back(2.0 * static_cast<double>(i));
  }
  std::vector<HostTensor> in;
  in.push_back(make_tensor(DType::kF32, kShape, x));
  in.push_back(make_tensor(DType::kF32, kShape, y));
  return in;
}

const std::vector<OutputSpec> kOut = {{DType::kF32, kShape}};

CallOptions options(uint64_t seed = 7) {
  CallOptions o;
  o.sentinel_seed = seed;
  o.launch = LaunchConfig{128, 1};
  return o;
}

void expect_clean_audit(const CallRecord& r) {
  EXPECT_TRUE(r.inputs_unchanged);
  EXPECT_EQ(r.mutated_input, -1);
  EXPECT_EQ(r.first_mutated_input_elem, -1);
  EXPECT_TRUE(r.guards_intact);
  EXPECT_EQ(r.first_guard_violation, -1);
  EXPECT_TRUE(r.all_written);
  EXPECT_EQ(r.first_unwritten, -1);
  EXPECT_EQ(r.unwritten_output, -1);
}

void expect_sums(const CallRecord& r, int64_t count) {
  ASSERT_EQ(r.outputs.size(), 1u);
  for (int64_t i = 0; i < count; ++i)
    EXPECT_EQ(r.outputs[0].value_at(i), 3.0 * static_cast<double>(i) + 0.25) << i;
}

class BothExecutors : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Executor> executor() const {
    return GetParam() == "forked" ? make_forked_executor() : make_in_process_executor();
  }
  CallRecord run(const std::string& kernel, const CallOptions& o = options()) {
    auto c = load(kernel);
    if (!c) return {};
    return executor()->run(*c, add_inputs(), kOut, o);
  }
};

TEST_P(BothExecutors, GoodKernelPassesTheAudit) {
  const CallRecord r = run("good_add");
  EXPECT_EQ(r.status, CallStatus::kOk) << r.message;
  expect_sums(r, kN);
  expect_clean_audit(r);
  EXPECT_EQ(r.sentinel, sentinel_bits(DType::kF32, 7));
  EXPECT_EQ(r.launch, (LaunchConfig{128, 1}));
  EXPECT_TRUE(r.outputs[0].is_contiguous());
}

TEST_P(BothExecutors, GoodKernelReadsPaddedAndBroadcastInputsByStride) {
  auto c = load("good_add");
  ASSERT_NE(c, nullptr);
  const std::vector<HostTensor> dense = add_inputs();
  HostTensor x(DType::kF32, kShape, {10, 1}, 3);  // padded rows behind a storage offset
  HostTensor y(DType::kF32, kShape, {0, 1});      // one row, broadcast
  for (int64_t i = 0; i < kN; ++i) {
    x.set_bits_at(i, dense[0].bits_at(i));
    y.set_bits_at(i, dense[1].bits_at(i % 8));
  }
  const CallRecord r = executor()->run(*c, {x, y}, kOut, options());
  EXPECT_EQ(r.status, CallStatus::kOk) << r.message;
  for (int64_t i = 0; i < kN; ++i)
    EXPECT_EQ(r.outputs[0].value_at(i), x.value_at(i) + y.value_at(i)) << i;
  expect_clean_audit(r);
}

TEST_P(BothExecutors, ReportsAMutatedInput) {
  const CallRecord r = run("add_mutate_input");
  EXPECT_EQ(r.status, CallStatus::kOk);
  EXPECT_FALSE(r.inputs_unchanged);
  EXPECT_EQ(r.mutated_input, 1);
  EXPECT_EQ(r.first_mutated_input_elem, 5);
  EXPECT_TRUE(r.guards_intact);
  EXPECT_TRUE(r.all_written);
}

TEST_P(BothExecutors, ReportsAWriteOnePastTheOutput) {
  const CallRecord r = run("add_write_past_end");
  EXPECT_EQ(r.status, CallStatus::kOk);
  EXPECT_FALSE(r.guards_intact);
  EXPECT_EQ(r.first_guard_violation,
            kN * static_cast<int64_t>(sizeof(float)));  // byte just past storage
  EXPECT_TRUE(r.inputs_unchanged);
  EXPECT_TRUE(r.all_written);
}

TEST_P(BothExecutors, ReportsAnUnwrittenOutputElement) {
  const CallRecord r = run("add_skip_last");
  EXPECT_EQ(r.status, CallStatus::kOk);
  EXPECT_FALSE(r.all_written);
  EXPECT_EQ(r.first_unwritten, kN - 1);
  EXPECT_EQ(r.unwritten_output, 0);
  EXPECT_EQ(r.outputs[0].bits_at(kN - 1), r.sentinel);
  EXPECT_TRUE(r.guards_intact);
  EXPECT_TRUE(r.inputs_unchanged);
}

TEST_P(BothExecutors, AnOverreadPullsTheGuardPatternIntoTheResult) {
  const CallRecord fixed = run("add_read_past_end");
  EXPECT_EQ(fixed.status, CallStatus::kOk);
  expect_clean_audit(fixed);  // a read leaves no trace in the buffers...
  expect_sums(fixed, kN - 1);
  EXPECT_TRUE(
      std::isnan(fixed.outputs[0].value_at(kN - 1)));  // ...but the NaN guard reaches the output
  CallOptions a = options(), b = options();
  a.randomize_guards = b.randomize_guards = true;
  a.guard_seed = 1;
  b.guard_seed = 2;
  const CallRecord ra = run("add_read_past_end", a), rb = run("add_read_past_end", b);
  EXPECT_NE(ra.outputs[0].bits_at(kN - 1),
            rb.outputs[0].bits_at(kN - 1));  // and differs with the guards
  EXPECT_EQ(ra.outputs[0].bits_at(0), rb.outputs[0].bits_at(0));
}

TEST_P(BothExecutors, ReportsAKernelErrorWithItsMessage) {
  const CallRecord r = run("add_error");
  EXPECT_EQ(r.status, CallStatus::kKernelError);
  EXPECT_EQ(r.message, "the kernel returned 7: fixture: block size 128 unsupported");
}

TEST_P(BothExecutors, ReportsAnException) {
  const CallRecord r = run("add_throw");
  EXPECT_EQ(r.status, CallStatus::kException);
  EXPECT_EQ(r.message, "the kernel threw: fixture: thrown from add_throw");
}

TEST_P(BothExecutors, ReportsARewrittenOutputView) {
  const CallRecord r = run("add_bad_shape");
  EXPECT_EQ(r.status, CallStatus::kBadOutput);
  EXPECT_NE(r.message.find("output 0: the kernel rewrote its view"), std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("(f32 [4, 8] -> f32 [4])"), std::string::npos) << r.message;
}

TEST_P(BothExecutors, DoesNotCallAKernelDeclaringAnotherOutputDtype) {
  auto c = load("good_add");  // declares f32 outputs
  ASSERT_NE(c, nullptr);
  const CallRecord r = executor()->run(*c, add_inputs(), {{DType::kF16, kShape}}, options());
  EXPECT_EQ(r.status, CallStatus::kBadOutput);
  EXPECT_EQ(r.message, "output 0: the kernel's contract declares f32, the op requires f16");
}

TEST_P(BothExecutors, PlainBuffersStartAtZero) {
  CallOptions o = options();
  o.plain_buffers = true;
  const CallRecord r = run("add_skip_last", o);
  EXPECT_EQ(r.status, CallStatus::kOk);
  EXPECT_EQ(r.sentinel, 0u);
  EXPECT_EQ(r.outputs[0].bits_at(kN - 1), 0u);
  EXPECT_TRUE(r.all_written);  // indistinguishable from a written zero: why kcv poisons
}

TEST_P(BothExecutors, ShiftsBufferAddresses) {
  CallOptions o = options();
  o.address_shift = 4;
  const CallRecord r = run("good_add", o);
  EXPECT_EQ(r.status, CallStatus::kOk);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(r.outputs[0].data()) % 8, 4u);
  expect_sums(r, kN);
}

TEST_P(BothExecutors, RunsCallsConcurrentlyOnSeparateBuffers) {
  auto c = load("good_add");
  ASSERT_NE(c, nullptr);
  std::vector<CallOptions> opts;
  for (uint64_t s = 1; s <= 4; ++s) opts.push_back(options(s));
  const std::vector<CallRecord> records =
      executor()->run_concurrently(*c, add_inputs(), kOut, opts);
  ASSERT_EQ(records.size(), 4u);
  for (std::size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i].status, CallStatus::kOk) << i;
    EXPECT_EQ(records[i].sentinel, sentinel_bits(DType::kF32, opts[i].sentinel_seed));
    expect_sums(records[i], kN);
    expect_clean_audit(records[i]);
  }
}

TEST_P(BothExecutors, ConcurrentAuditsStayPerCall) {
  auto c = load("add_skip_last");
  ASSERT_NE(c, nullptr);
  const std::vector<CallRecord> records =
      executor()->run_concurrently(*c, add_inputs(), kOut, {options(1), options(2)});
  ASSERT_EQ(records.size(), 2u);
  for (const CallRecord& r : records) {
    EXPECT_EQ(r.status, CallStatus::kOk);
    EXPECT_EQ(r.first_unwritten, kN - 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Executors, BothExecutors, ::testing::Values("in-process", "forked"),
                         [](const auto& info) {
                           return info.param == "forked" ? "Forked" : "InProcess";
                         });

TEST(ForkedExecutor, TurnsASegfaultIntoACrashRecordAndCarriesOn) {
  auto bad = load("add_segfault");
  ASSERT_NE(bad, nullptr);
  auto executor = make_forked_executor();
  const CallRecord r = executor->run(*bad, add_inputs(), kOut, options());
  EXPECT_EQ(r.status, CallStatus::kCrash);
  EXPECT_NE(r.message.find("SIGSEGV"), std::string::npos) << r.message;
  auto good = load("good_add");
  EXPECT_EQ(executor->run(*good, add_inputs(), kOut, options()).status, CallStatus::kOk);
}

TEST(ForkedExecutor, KillsAHangAtTheDeadline) {
  auto hang = load("add_hang");
  ASSERT_NE(hang, nullptr);
  CallOptions o = options();
  o.timeout_ms = 300;
  const auto start = std::chrono::steady_clock::now();
  const CallRecord r = make_forked_executor()->run(*hang, add_inputs(), kOut, o);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.status, CallStatus::kTimeout);
  EXPECT_NE(r.message.find("300 ms"), std::string::npos) << r.message;
  EXPECT_GE(elapsed, std::chrono::milliseconds(300));
  EXPECT_LT(elapsed,
            std::chrono::milliseconds(CallOptions{}.timeout_ms));  // our deadline, not the default
}

TEST(ForkedExecutor, TreatsAnExitBeforeReturningAsACrash) {
  auto c = load("add_exit");
  ASSERT_NE(c, nullptr);
  const CallRecord r = make_forked_executor()->run(*c, add_inputs(), kOut, options());
  EXPECT_EQ(r.status, CallStatus::kCrash);
  EXPECT_NE(r.message.find("exited with code 3"), std::string::npos) << r.message;
}

TEST(ForkedExecutor, FailsEveryUnfinishedConcurrentCallWhenTheProcessDies) {
  auto c = load("add_segfault");
  ASSERT_NE(c, nullptr);
  const auto records = make_forked_executor()->run_concurrently(
      *c, add_inputs(), kOut, {options(1), options(2), options(3)});
  ASSERT_EQ(records.size(), 3u);
  for (const CallRecord& r : records) {
    EXPECT_EQ(r.status, CallStatus::kCrash);
    EXPECT_NE(r.message.find("3 concurrent calls"), std::string::npos) << r.message;
  }
}

TEST(InProcessExecutor, CatchesExceptionsOnEveryConcurrentThread) {
  auto c = load("add_throw");
  ASSERT_NE(c, nullptr);
  const auto records = make_in_process_executor()->run_concurrently(*c, add_inputs(), kOut,
                                                                    {options(1), options(2)});
  ASSERT_EQ(records.size(), 2u);
  for (const CallRecord& r : records) EXPECT_EQ(r.status, CallStatus::kException);
}

TEST(CallStatusName, NamesEveryStatus) {
  EXPECT_EQ(call_status_name(CallStatus::kOk), "ok");
  EXPECT_EQ(call_status_name(CallStatus::kKernelError), "kernel_error");
  EXPECT_EQ(call_status_name(CallStatus::kException), "exception");
  EXPECT_EQ(call_status_name(CallStatus::kCrash), "crash");
  EXPECT_EQ(call_status_name(CallStatus::kTimeout), "timeout");
  EXPECT_EQ(call_status_name(CallStatus::kBadOutput), "bad_output");
}

}  // namespace
}  // namespace kcv
