// File: tests/unit/report/table_test.cpp
// The terminal table: a header naming kernel, op, profile and seed; one row per gate with its
// verdict and worst ratio; the replay lines after the table; ANSI colour only when asked.
#include <gtest/gtest.h>

#include <sstream>

#include "unit/report/sample_report.hpp"

namespace kcv {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The index of the line starting with `prefix`, or -1.
int find_line(const std::vector<std::string>& lines, const std::string& prefix) {
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind(prefix, 0) == 0) return static_cast<int>(i);
  }
  return -1;
}

TEST(TableReport, HeaderNamesKernelOpProfileAndSeed) {
  const std::string header = lines_of(render_table(testing::sample_report())).at(0);
  EXPECT_NE(header.find("redteam.sample<&>"), std::string::npos) << header;
  EXPECT_NE(header.find("softmax"), std::string::npos) << header;
  EXPECT_NE(header.find("cuda-default"), std::string::npos) << header;
  EXPECT_NE(header.find("0x6b6376"), std::string::npos) << header;
}

TEST(TableReport, HasARowForEveryGateWithItsVerdict) {
  const VerifyReport r = testing::sample_report();
  const auto lines = lines_of(render_table(r));
  for (const GateResult& g : r.results) {
    const int i = find_line(lines, std::string(gate_code(g.gate)) + " ");
    ASSERT_GE(i, 0) << gate_code(g.gate);
    const std::string word = g.verdict == Verdict::kPass ? "pass" : g.verdict == Verdict::kFail ? "fail"
                             : g.verdict == Verdict::kError ? "error" : "not_applicable";
    EXPECT_NE(lines[i].find(word), std::string::npos) << lines[i];
  }
}

TEST(TableReport, ShowsRatiosAndReasons) {
  const auto lines = lines_of(render_table(testing::sample_report()));
  const std::string cmp = lines.at(find_line(lines, "CMP-01 "));
  EXPECT_NE(cmp.find(" inf "), std::string::npos) << cmp;
  const std::string res = lines.at(find_line(lines, "RES-02 "));
  EXPECT_NE(res.find("no device code"), std::string::npos) << res;
  EXPECT_NE(res.find(" - "), std::string::npos) << res;
}

TEST(TableReport, PrintsReplayLinesAfterTheTable) {
  const VerifyReport r = testing::sample_report();
  const std::string text = render_table(r);
  const auto lines = lines_of(text);
  const int last_row = find_line(lines, "RES-02 ");
  for (const std::string& replay : r.replay_lines) {
    const std::size_t at = text.find(replay);
    ASSERT_NE(at, std::string::npos);
    EXPECT_GT(at, text.find(lines.at(last_row)));
  }
  EXPECT_GE(find_line(lines, "result: FAIL"), 0) << text;
}

TEST(TableReport, UsesColourOnlyWhenAsked) {
  const VerifyReport r = testing::sample_report();
  EXPECT_EQ(render_table(r, false).find('\x1b'), std::string::npos);
  EXPECT_NE(render_table(r, true).find("\x1b["), std::string::npos);
}

}  // namespace
}  // namespace kcv
