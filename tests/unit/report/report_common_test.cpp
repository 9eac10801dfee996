// File: tests/unit/report/report_common_test.cpp
// Shared report helpers: numbers for people (non-finite spelled out) and the matching of replay
// lines to gates, by probe token and, when a line does not carry the token, by order.
#include <gtest/gtest.h>

#include <limits>

#include "report/report_common.hpp"
#include "unit/report/sample_report.hpp"

namespace kcv {
namespace {

TEST(ReportNumbers, SpellOutNonFiniteValues) {
  EXPECT_EQ(report::format_number(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(report::format_number(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(report::format_number(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(report::format_number(0.125), "0.125");
}

TEST(ReplayMatching, FindsEachGatesLineByToken) {
  VerifyReport r = testing::sample_report();
  std::swap(r.replay_lines[0], r.replay_lines[1]);  // order no longer helps
  EXPECT_EQ(report::replay_for(r, 0), r.replay_lines[1]);
  EXPECT_EQ(report::replay_for(r, 6), r.replay_lines[0]);
  EXPECT_EQ(report::replay_for(r, 1), std::nullopt);
}

TEST(ReplayMatching, FallsBackToTheOrderOfFailingGates) {
  VerifyReport r = testing::sample_report();
  r.replay_lines = {"first", "second"};
  EXPECT_EQ(report::replay_for(r, 0), "first");
  EXPECT_EQ(report::replay_for(r, 6), "second");
}

}  // namespace
}  // namespace kcv
