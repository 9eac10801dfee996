// File: tests/unit/report/junit_test.cpp
// The JUnit XML parses back (pugixml) with the right counts per suite and in total, one testcase
// per gate, and the failure / skipped / error elements carrying the evidence and the replay line.
#include <gtest/gtest.h>

#include <pugixml.hpp>

#include "unit/report/sample_report.hpp"

namespace kcv {
namespace {

pugi::xml_document parsed(const std::vector<VerifyReport>& reports) {
  pugi::xml_document doc;
  const std::string xml = render_junit(reports);
  const pugi::xml_parse_result ok = doc.load_string(xml.c_str());
  EXPECT_TRUE(ok) << ok.description() << "\n" << xml;
  return doc;
}

TEST(JunitReport, CountsEachVerdictPerSuite) {
  const pugi::xml_document doc = parsed({testing::sample_report()});
  const pugi::xml_node suite = doc.child("testsuites").child("testsuite");
  EXPECT_STREQ(suite.attribute("name").value(), "redteam.sample<&>");
  EXPECT_EQ(suite.attribute("tests").as_int(), 12);
  EXPECT_EQ(suite.attribute("failures").as_int(), 2);
  EXPECT_EQ(suite.attribute("errors").as_int(), 1);
  EXPECT_EQ(suite.attribute("skipped").as_int(), 1);
}

TEST(JunitReport, TotalsSumOverSuites) {
  const pugi::xml_document doc = parsed({testing::sample_report(), testing::sample_report()});
  const pugi::xml_node root = doc.child("testsuites");
  EXPECT_EQ(root.attribute("tests").as_int(), 24);
  EXPECT_EQ(root.attribute("failures").as_int(), 4);
  EXPECT_EQ(root.attribute("errors").as_int(), 2);
  EXPECT_EQ(root.attribute("skipped").as_int(), 2);
  EXPECT_EQ(std::distance(root.children("testsuite").begin(), root.children("testsuite").end()), 2);
}

TEST(JunitReport, HasOneTestcasePerGateInOrder) {
  const VerifyReport r = testing::sample_report();
  const pugi::xml_document doc = parsed({r});
  std::size_t i = 0;
  for (pugi::xml_node tc : doc.child("testsuites").child("testsuite").children("testcase")) {
    ASSERT_LT(i, r.results.size());
    EXPECT_STREQ(tc.attribute("classname").value(), "kcv.softmax");
    EXPECT_EQ(tc.attribute("name").value(), gate_code(r.results[i].gate));
    ++i;
  }
  EXPECT_EQ(i, r.results.size());
}

TEST(JunitReport, FailureCarriesSummaryEvidenceAndReplay) {
  const VerifyReport r = testing::sample_report();
  const pugi::xml_document doc = parsed({r});
  const pugi::xml_node failure =
      doc.child("testsuites").child("testsuite").find_child_by_attribute("testcase", "name", "CMP-01").child("failure");
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure.attribute("message").value(), r.results[0].evidence.summary);
  const std::string text = failure.text().get();
  EXPECT_NE(text.find("index 256"), std::string::npos) << text;
  EXPECT_NE(text.find(r.replay_lines[0]), std::string::npos) << text;
}

TEST(JunitReport, NotApplicableIsSkippedAndErrorIsError) {
  const VerifyReport r = testing::sample_report();
  const pugi::xml_document doc = parsed({r});
  const pugi::xml_node suite = doc.child("testsuites").child("testsuite");
  const pugi::xml_node skipped = suite.find_child_by_attribute("testcase", "name", "RES-02").child("skipped");
  ASSERT_TRUE(skipped);
  EXPECT_EQ(skipped.attribute("message").value(), r.results[11].reason);
  const pugi::xml_node error = suite.find_child_by_attribute("testcase", "name", "PRC-01").child("error");
  ASSERT_TRUE(error);
  EXPECT_EQ(error.attribute("message").value(), r.results[8].reason);
  EXPECT_FALSE(suite.find_child_by_attribute("testcase", "name", "CMP-02").first_child());
}

}  // namespace
}  // namespace kcv
