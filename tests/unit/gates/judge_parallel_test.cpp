// File: tests/unit/gates/judge_parallel_test.cpp
// The judges' own element loops (EXC-01's mask check, EXC-02's subnormal check, PRC-01's tie
// check, ORD-02's bitwise comparison, ORD-03's spread between schedules, RES-01's results moved
// by guard contents) on outputs above the split threshold, with defects spread
// over several chunks: the evidence names the first defective element and counts all of them,
// as the serial loop did. (The split is the machine's: on one core these loops stay serial.)
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "gates/families.hpp"
#include "gates/parallel.hpp"
#include "unit/gates/synthetic.hpp"

namespace kcv {
namespace {

using gates::kParallelFrom;
using testing::Synthetic;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::size_t kN = kParallelFrom + 4097;
/// Defects in increasing index order, in chunk 0 and a later chunk of a 2-way split and in
/// several chunks, none in chunk 0, of an 8-way one; two close together (one chunk); the last
/// element.
const std::vector<std::size_t> kDefects = {kN / 4 + 1, kN / 2 + 3, kN / 2 + 50, kN / 4 * 3, kN - 1};

/// fp32-exact values in [1, 2) and a bound they all meet with ratio 0.
std::vector<double> exact_values() {
  std::vector<double> y(kN);
  for (std::size_t i = 0; i < kN; ++i) y[i] = 1.0 + static_cast<double>(i % 1000) * 0x1p-10;
  return y;
}

Synthetic large(const std::vector<double>& y, const std::vector<double>& tau,
                const std::vector<double>& got) {
  Synthetic s;
  s.with_oracle(DType::kF32, y, tau).with_call(got);
  return s;
}

TEST(JudgeParallel, Exc01NamesTheFirstMaskMismatchAndCountsAll) {
  const std::vector<double> y = exact_values();
  std::vector<double> got = y;
  for (std::size_t i : kDefects) got[i] = kNaN;
  const GateResult r = large(y, std::vector<double>(kN, 0x1p-20), got).judge(GateId::kExc01);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.evidence.worst_index, static_cast<int64_t>(kDefects.front()));
  EXPECT_EQ(r.evidence.violations, static_cast<int64_t>(kDefects.size()));
}

TEST(JudgeParallel, Exc02NamesTheFirstOfTiedFlushesAndCountsAll) {
  const double sub = 0x1p-140;  // an fp32 subnormal
  std::vector<double> y = exact_values();
  Synthetic s;
  s.contract.profile = ProfileId::kStrict;  // keeps subnormals
  const PrecisionModel m = precision_model(s.contract, DType::kF32);
  std::vector<double> got = y;
  for (std::size_t i : kDefects) y[i] = sub, got[i] = 0.0;  // flushed: the same ratio everywhere
  std::vector<double> tau(kN);
  for (std::size_t i = 0; i < kN; ++i) tau[i] = rounding_bound(m, y[i], 0);
  s.with_oracle(DType::kF32, y, tau).with_call(got);
  const GateResult r = s.judge(GateId::kExc02);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.evidence.worst_index, static_cast<int64_t>(kDefects.front()));
  EXPECT_EQ(r.evidence.violations, static_cast<int64_t>(kDefects.size()));
  EXPECT_NE(r.evidence.summary.find("5 subnormal result(s) read as zero"), std::string::npos)
      << r.evidence.summary;
}

TEST(JudgeParallel, Prc01NamesTheFirstWrongTieAndCountsAll) {
  const double tie = 1.0 + 3 * 0x1p-24;  // RN-even: 1 + 2^-22; truncation: 1 + 2^-23
  std::vector<double> y = exact_values();
  std::vector<double> got = y;
  for (std::size_t i : kDefects) y[i] = tie, got[i] = 1.0 + 0x1p-23;
  y[kN / 2] = tie, got[kN / 2] = 1.0 + 0x1p-22;  // a tie rounded right: counted, not wrong
  Synthetic s;
  const PrecisionModel m = precision_model(s.contract, DType::kF32);
  std::vector<double> tau(kN);
  for (std::size_t i = 0; i < kN; ++i) tau[i] = rounding_bound(m, y[i], 0);
  s.with_oracle(DType::kF32, y, tau).with_call(got);
  const GateResult r = s.judge(GateId::kPrc01);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.evidence.worst_index, static_cast<int64_t>(kDefects.front()));
  EXPECT_EQ(r.evidence.violations, static_cast<int64_t>(kDefects.size()));
  EXPECT_NE(r.evidence.summary.find("5 of 6 exact ties"), std::string::npos) << r.evidence.summary;
}

TEST(JudgeParallel, Ord02NamesTheFirstDifferenceOfTheFirstDifferingCall) {
  const std::vector<double> y = exact_values();
  Synthetic s = large(y, std::vector<double>(kN, 0x1p-20), y);
  s.with_call(y).with_call(y);
  HostTensor& one = s.outcome.calls[1].outputs[0];
  HostTensor& two = s.outcome.calls[2].outputs[0];
  for (std::size_t i : kDefects) {
    const auto at = static_cast<int64_t>(i);
    one.set_bits_at(at, one.bits_at(at) ^ 1u);
  }
  two.set_bits_at(5, two.bits_at(5) ^ 1u);  // earlier in its output, but in a later call
  const GateResult r = s.judge(GateId::kOrd02);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.evidence.worst_index, static_cast<int64_t>(kDefects.front()));
  EXPECT_EQ(r.evidence.violations, static_cast<int64_t>(kDefects.size() + 1));
  EXPECT_NE(r.evidence.summary.find("call 1 differs"), std::string::npos) << r.evidence.summary;
}

TEST(JudgeParallel, Ord03NamesTheFirstOfTheWidestSpreadsAndCountsAll) {
  const std::vector<double> y = exact_values();
  const double tau = 0x1p-20;
  std::vector<double> other = y;
  for (std::size_t i : kDefects) other[i] = y[i] + 3 * tau;  // spread 1.5 * (2 tau)
  const std::size_t widest = kDefects[2];
  other[widest] = y[widest] + 5 * tau;  // the widest, tied with a later one
  other[kDefects[3]] = y[kDefects[3]] + 5 * tau;
  Synthetic s = large(y, std::vector<double>(kN, tau), y);
  s.with_call(other).with_call(y);
  const GateResult r = s.judge(GateId::kOrd03);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.finding, Finding::kScheduleDependent);
  EXPECT_EQ(r.evidence.worst_index, static_cast<int64_t>(widest));
  EXPECT_EQ(r.evidence.worst_ratio, 2.5);
  EXPECT_EQ(r.evidence.violations, static_cast<int64_t>(kDefects.size()));
}

TEST(JudgeParallel, Res01NamesTheFirstGuardDependenceOfTheFirstMovedCall) {
  const std::vector<double> y = exact_values();
  const double tau = 0x1p-20;
  std::vector<double> moved = y, late = y;
  for (std::size_t i : kDefects) moved[i] = y[i] + 3 * tau;  // beyond 2*tau of call 0
  late[5] = y[5] + 3 * tau;  // earlier in its output, but in a later call
  Synthetic s = large(y, std::vector<double>(kN, tau), y);
  s.with_call(moved).with_call(late);
  const GateResult r = s.judge(GateId::kRes01);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.finding, Finding::kReadOutside);
  EXPECT_EQ(r.evidence.worst_index, static_cast<int64_t>(kDefects.front()));
  EXPECT_EQ(r.evidence.violations, static_cast<int64_t>(kDefects.size() + 1));
  EXPECT_NE(r.evidence.summary.find("call 1 gives"), std::string::npos) << r.evidence.summary;
}

// PRC's sums run in fixed blocks: the same bits for any thread count, and for an output under
// one block exactly the serial loop's (the sum of kN terms of ten decades is order-sensitive).
TEST(JudgeParallel, BitsLostIsTheSameOnAnyNumberOfThreads) {
  std::vector<double> y(kN), got(kN);
  for (std::size_t i = 0; i < kN; ++i) {
    y[i] = static_cast<float>(
        std::ldexp(1.0 + static_cast<double>(i % 997) / 997, static_cast<int>(i % 31) - 15));
    got[i] =
        static_cast<float>(y[i] * (1 + 0x1p-22 * static_cast<double>(static_cast<int>(i % 7) - 3)));
  }
  Synthetic s;
  s.with_oracle(DType::kF32, y, std::vector<double>(kN, 0.0)).with_call(got);
  const OracleOutput& want = s.oracle.outputs[0];
  const HostTensor& out = s.outcome.calls[0].outputs[0];
  const gates::BitsLost one = gates::bits_lost(want, out, gates::Split{4096, 1});
  ASSERT_EQ(one.n, static_cast<int64_t>(kN));
  for (unsigned threads : {2u, 3u, 8u, 64u}) {
    const gates::BitsLost many = gates::bits_lost(want, out, gates::Split{4096, threads});
    EXPECT_EQ(many.rms_e, one.rms_e) << threads;
    EXPECT_EQ(many.rms_d, one.rms_d) << threads;
    EXPECT_EQ(many.bits, one.bits) << threads;
  }
  // One block: the plain loop, term by term in index order.
  double se = 0;
  for (std::size_t i = 0; i < kN; ++i) se += (got[i] - y[i]) * (got[i] - y[i]);
  const gates::BitsLost serial = gates::bits_lost(want, out, gates::Split{kN, 8});
  EXPECT_EQ(serial.rms_e, std::sqrt(se / static_cast<double>(kN)));
  // The block sums are not the serial sum's rounding (so the split is really exercised).
  EXPECT_NE(one.rms_e, serial.rms_e);
}

}  // namespace
}  // namespace kcv
