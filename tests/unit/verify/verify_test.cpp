// File: tests/unit/verify/verify_test.cpp
// The pipeline end to end on in-process C++ kernels: a correct kernel passes, a kernel with a
// missing tail mask fails CMP-01 and shrinks to the smallest failing shape, the replay token
// rebuilds the same probe, and the allclose replica lets the tail bug through.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kcv/replica.hpp"
#include "kcv/verify.hpp"

namespace kcv {
namespace {

float at(const kcv_tensor& t, int64_t r, int64_t c) {
  return static_cast<const float*>(t.data)[r * t.strides[0] + c * t.strides[1]];
}

int add_correct(const kcv_tensor* in, int32_t, kcv_tensor* out, int32_t, const kcv_call*) {
  float* o = static_cast<float*>(out[0].data);
  for (int64_t r = 0; r < in[0].shape[0]; ++r) {
    for (int64_t c = 0; c < in[0].shape[1]; ++c) {
      o[r * out[0].strides[0] + c * out[0].strides[1]] = at(in[0], r, c) + at(in[1], r, c);
    }
  }
  return 0;
}

// Processes whole blocks of 256 columns correctly and gets the tail wrong (reads x twice).
int add_tail_bug(const kcv_tensor* in, int32_t, kcv_tensor* out, int32_t, const kcv_call*) {
  float* o = static_cast<float*>(out[0].data);
  const int64_t n = in[0].shape[1];
  const int64_t full = n / 256 * 256;
  for (int64_t r = 0; r < in[0].shape[0]; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      const float y = c < full ? at(in[1], r, c) : at(in[0], r, c);
      o[r * out[0].strides[0] + c * out[0].strides[1]] = at(in[0], r, c) + y;
    }
  }
  return 0;
}

int add_zero(const kcv_tensor*, int32_t, kcv_tensor* out, int32_t, const kcv_call*) {
  std::memset(out[0].data, 0, 4 * static_cast<std::size_t>(out[0].shape[0] * out[0].shape[1]));
  return 0;
}

std::unique_ptr<Candidate> candidate(const char* name, kcv_run_fn fn) {
  kcv_kernel k{name, "add", R"({"inputs":["f32","f32"]})", fn, nullptr};
  auto c = make_candidate(k);
  EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().to_string());
  return std::move(c).value();
}

VerifyOptions quick(std::vector<GateId> gates) {
  VerifyOptions o;
  o.gates = std::move(gates);
  o.include_large = false;
  return o;
}

TEST(Verify, CorrectKernelPassesNumericAndStructuralGates) {
  auto c = candidate("add_correct", add_correct);
  auto ex = make_in_process_executor();
  auto report = verify(*c, *ex, quick({GateId::kCmp01, GateId::kCmp02, GateId::kExc01}));
  ASSERT_TRUE(report.has_value()) << report.error().to_string();
  for (const GateResult& r : report->results) {
    EXPECT_EQ(r.verdict, Verdict::kPass) << gate_code(r.gate) << ": " << r.evidence.summary;
  }
  EXPECT_TRUE(report->passed());
  EXPECT_TRUE(report->replay_lines.empty());
}

TEST(Verify, TailBugFailsCmp01AndShrinksToOneElement) {
  auto c = candidate("add_tail_bug", add_tail_bug);
  auto ex = make_in_process_executor();
  auto report = verify(*c, *ex, quick({GateId::kCmp01}));
  ASSERT_TRUE(report.has_value());
  const GateResult& r = report->results.at(0);
  ASSERT_EQ(r.verdict, Verdict::kFail);
  ASSERT_TRUE(r.failing_probe.has_value());
  // Every column of a row narrower than one block is in the tail: the minimal probe is 1x1.
  EXPECT_EQ(r.failing_probe->sizes.at("M"), 1);
  EXPECT_EQ(r.failing_probe->sizes.at("N"), 1);
  ASSERT_EQ(report->replay_lines.size(), 1u);
  EXPECT_NE(report->replay_lines[0].find("kcv replay"), std::string::npos);
}

TEST(Verify, ReplayTokenRebuildsTheFailingProbeAndReproduces) {
  auto c = candidate("add_tail_bug", add_tail_bug);
  auto ex = make_in_process_executor();
  auto report = verify(*c, *ex, quick({GateId::kCmp01}));
  ASSERT_TRUE(report.has_value());
  const Probe& failing = *report->results.at(0).failing_probe;
  auto rebuilt = probe_from_token(probe_to_token(failing));
  ASSERT_TRUE(rebuilt.has_value());
  EXPECT_EQ(*rebuilt, failing);
  EXPECT_EQ(run_probe(*c, *ex, *rebuilt, c->contract()).verdict, Verdict::kFail);
}

TEST(Replica, AcceptsTheTailBugAndRejectsAConstantKernel) {
  auto ex = make_in_process_executor();
  auto tail = candidate("add_tail_bug", add_tail_bug);
  auto accepted = allclose_replica(*tail, *ex);
  ASSERT_TRUE(accepted.has_value());
  EXPECT_TRUE(accepted->accepted) << accepted->reason;
  EXPECT_EQ(accepted->trials_run, 5);

  auto zero = candidate("add_zero", add_zero);
  auto rejected = allclose_replica(*zero, *ex);
  ASSERT_TRUE(rejected.has_value());
  EXPECT_FALSE(rejected->accepted);
  EXPECT_FALSE(rejected->reason.empty());
}

TEST(Verify, UnknownOpIsAnErrorNotACrash) {
  kcv_kernel k{"k", "no_such_op", nullptr, add_correct, nullptr};
  auto c = make_candidate(k);
  if (!c) {
    EXPECT_NE(c.error().message.find("no_such_op"), std::string::npos);
    return;
  }
  auto ex = make_in_process_executor();
  auto report = verify(**c, *ex, quick({GateId::kCmp01}));
  ASSERT_FALSE(report.has_value());
  EXPECT_NE(report.error().message.find("no_such_op"), std::string::npos);
}

}  // namespace
}  // namespace kcv
