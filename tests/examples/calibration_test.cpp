// File: tests/examples/calibration_test.cpp
// The three-state calibration of the gates on the bundled kernels (research note §2.2, issue
// item 9): every red-team kernel fails the gate its name announces, every positive-control
// kernel fails none, and the KernelBench allclose replica lets at least 90 % of the red team
// through (the acceptance criterion: the rigor gap the red team exists to show).
// One test case per kernel, so `ctest -j` spreads the work; each runs in the forked executor
// with the large shapes on, as `kcv calibrate` does. Red-team kernels run only their intended
// gate: what else they fail is not the claim under test. Shrinking is off: a verdict does not
// depend on it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bundled.hpp"
#include "kcv/replica.hpp"
#include "kcv/verify.hpp"

namespace {

using kcv::GateId;
using kcv::Verdict;

std::vector<const kcv_kernel*> bundled_where(bool (*keep)(const kcv_kernel&)) {
  std::vector<const kcv_kernel*> out;
  for (const kcv_kernel& k : kcv_bundled_kernels()) {
    if (keep(k)) out.push_back(&k);
  }
  return out;
}

const kcv_kernel* bundled_named(std::string_view name) {
  for (const kcv_kernel& k : kcv_bundled_kernels()) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

std::string case_name(const testing::TestParamInfo<const kcv_kernel*>& info) {
  std::string name = info.param->name;
  std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  return name;
}

std::unique_ptr<kcv::Candidate> candidate_of(const kcv_kernel& k) {
  auto c = kcv::make_candidate(k, std::string(kcv_bundled_base_dir()));
  if (!c) {
    ADD_FAILURE() << k.name << ": " << c.error().to_string();
    return nullptr;
  }
  return std::move(*c);
}

kcv::VerifyOptions calibration_options() {
  kcv::VerifyOptions o;
  o.shrink = false;
  o.include_large = true;
  return o;
}

const kcv::GateResult* result_for(const kcv::VerifyReport& r, GateId gate) {
  for (const kcv::GateResult& g : r.results) {
    if (g.gate == gate) return &g;
  }
  return nullptr;
}

std::string describe(const kcv::GateResult& g) {
  std::string s = std::string(kcv::gate_code(g.gate)) + " " + std::string(kcv::verdict_name(g.verdict));
  if (!g.reason.empty()) s += ": " + g.reason;
  if (!g.evidence.summary.empty()) s += " [" + g.evidence.probe_label + "] " + g.evidence.summary;
  return s;
}

class RedTeamKernel : public testing::TestWithParam<const kcv_kernel*> {};

TEST_P(RedTeamKernel, FailsItsIntendedGate) {
  const kcv_kernel& k = *GetParam();
  const std::optional<GateId> gate = intended_gate(std::string_view(k.name));
  ASSERT_TRUE(gate.has_value()) << k.name << " does not name its gate";
  if (*gate == GateId::kRes02 && k.device_code == nullptr) GTEST_SKIP() << "built without nvcc: no device code";
  auto candidate = candidate_of(k);
  ASSERT_NE(candidate, nullptr);
  auto executor = kcv::make_forked_executor();
  kcv::VerifyOptions options = calibration_options();
  options.gates = {*gate};
  auto report = kcv::verify(*candidate, *executor, options);
  ASSERT_TRUE(report) << report.error().to_string();
  const kcv::GateResult* r = result_for(*report, *gate);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->verdict, Verdict::kFail) << k.name << " escaped: " << describe(*r);
}

INSTANTIATE_TEST_SUITE_P(Bundled, RedTeamKernel, testing::ValuesIn(bundled_where(is_redteam_kernel)), case_name);

class PositiveControlKernel : public testing::TestWithParam<const kcv_kernel*> {};

TEST_P(PositiveControlKernel, FailsNoGate) {
  const kcv_kernel& k = *GetParam();
  auto candidate = candidate_of(k);
  ASSERT_NE(candidate, nullptr);
  auto executor = kcv::make_forked_executor();
  auto report = kcv::verify(*candidate, *executor, calibration_options());
  ASSERT_TRUE(report) << report.error().to_string();
  for (const kcv::GateResult& g : report->results) {
    EXPECT_NE(g.verdict, Verdict::kFail) << k.name << ": " << describe(g);
    EXPECT_NE(g.verdict, Verdict::kError) << k.name << ": " << describe(g);
  }
}

INSTANTIATE_TEST_SUITE_P(Bundled, PositiveControlKernel, testing::ValuesIn(bundled_where(is_control_kernel)),
                         case_name);

kcv::Verdict exc02_verdict(std::optional<kcv::ProfileId> profile) {
  const kcv_kernel* k = bundled_named("control.mul_ftz_fast_math");
  if (k == nullptr) {
    ADD_FAILURE() << "control.mul_ftz_fast_math is not bundled";
    return Verdict::kError;
  }
  auto candidate = candidate_of(*k);
  if (candidate == nullptr) return Verdict::kError;
  auto executor = kcv::make_forked_executor();
  kcv::VerifyOptions options = calibration_options();
  options.gates = {GateId::kExc02};
  options.profile = profile;
  auto report = kcv::verify(*candidate, *executor, options);
  if (!report) {
    ADD_FAILURE() << report.error().to_string();
    return Verdict::kError;
  }
  const kcv::GateResult* r = result_for(*report, GateId::kExc02);
  return r != nullptr ? r->verdict : Verdict::kError;
}

TEST(FastMathControl, PassesSubnormalGateUnderItsDeclaredProfile) {
  EXPECT_EQ(exc02_verdict(std::nullopt), Verdict::kPass);
}

TEST(FastMathControl, FailsSubnormalGateUnderStrict) {
  EXPECT_EQ(exc02_verdict(kcv::ProfileId::kStrict), Verdict::kFail);
}

struct ReplicaTally {
  int accepted = 0;
  int total = 0;
  std::string rejected;  // "name: reason" lines
};

ReplicaTally replica_tally(bool (*keep)(const kcv_kernel&)) {
  ReplicaTally t;
  auto executor = kcv::make_forked_executor();
  for (const kcv_kernel* k : bundled_where(keep)) {
    auto candidate = candidate_of(*k);
    if (candidate == nullptr) continue;
    auto r = kcv::allclose_replica(*candidate, *executor);
    ++t.total;
    if (r && r->accepted) {
      ++t.accepted;
    } else {
      t.rejected += std::string("\n  ") + k->name + ": " + (r ? r->reason : r.error().to_string());
    }
  }
  return t;
}

TEST(AllcloseReplica, AcceptsAtLeastNinetyPercentOfTheRedTeam) {
  const ReplicaTally t = replica_tally(is_redteam_kernel);
  ASSERT_GT(t.total, 0);
  std::printf("[ replica  ] accepted %d of %d red-team kernels\n", t.accepted, t.total);
  EXPECT_GE(10 * t.accepted, 9 * t.total) << t.accepted << " of " << t.total << " accepted; rejected:" << t.rejected;
}

TEST(AllcloseReplica, AcceptsEveryPositiveControlKernel) {
  const ReplicaTally t = replica_tally(is_control_kernel);
  ASSERT_GT(t.total, 0);
  EXPECT_EQ(t.accepted, t.total) << "rejected:" << t.rejected;
}

}  // namespace
