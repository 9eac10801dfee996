// File: tests/unit/report/audit_figures_test.cpp
// The three SVG figures and the HTML page, on the hand-computed store of
// audit_report_store.hpp: each SVG parses as XML (pugixml), draws the expected bars, bins and
// cells with the expected data, and escapes store text; the page embeds all three figures
// under their ids and loads nothing: no script, no external reference.
#include <gtest/gtest.h>

#include <pugixml.hpp>

#include "kcv/audit_report.hpp"
#include "unit/audit/audit_fixtures.hpp"
#include "unit/report/audit_report_store.hpp"

namespace kcv::audit_report {
namespace {

class AuditFigures : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = dir_.file("report.db");
    testing::write_report_store(path);
    audit::Store store = audit::Store::open(path).value();
    report_ = build_report(store, path, Options{}).value();
  }

  // Parses `svg` as XML and returns the <svg> element (test fails when it is not well-formed).
  pugi::xml_node parse(const std::string& svg) {
    const pugi::xml_parse_result ok = doc_.load_string(svg.c_str());
    EXPECT_TRUE(ok) << ok.description() << " at offset " << ok.offset << "\n" << svg;
    return doc_.child("svg");
  }

  audit::testing::ScratchDir dir_;
  AuditReport report_;
  pugi::xml_document doc_;
};

int64_t attr_int(const pugi::xml_node& n, const char* name) {
  return n.attribute(name).as_llong(-1);
}

TEST_F(AuditFigures, RigorGapDrawsOneBarPerRateWithItsCounts) {
  const pugi::xml_node svg = parse(svg_rigor_gap(report_));
  ASSERT_TRUE(svg);
  std::map<std::string, std::pair<int64_t, int64_t>> bars;
  std::map<std::string, double> widths;
  for (const pugi::xpath_node& n : svg.select_nodes("//rect[@class='bar']")) {
    const std::string key = n.node().attribute("data-key").value();
    bars[key] = {attr_int(n.node(), "data-hits"), attr_int(n.node(), "data-total")};
    widths[key] = n.node().attribute("width").as_double();
  }
  const std::map<std::string, std::pair<int64_t, int64_t>> expected = {
      {"gap:replica", {2, 4}}, {"gap:original", {2, 2}}, {"any", {4, 7}},
      {"tf", {2, 7}},          {"tf:replica", {1, 4}},   {"gate:CMP-01", {1, 6}},
      {"gate:CMP-02", {1, 2}}, {"gate:EXC-01", {1, 3}},  {"gate:ORD-02", {1, 2}}};
  EXPECT_EQ(bars, expected);
  EXPECT_NEAR(widths["any"], 2 * widths["tf"], 0.2);                    // 4/7 against 2/7
  EXPECT_NEAR(widths["gap:original"], 2 * widths["gate:CMP-02"], 0.2);  // 100% against 50%
  EXPECT_NE(svg_rigor_gap(report_).find("CMP-02 (TF)"), std::string::npos);
}

TEST_F(AuditFigures, CalibrationDrawsNonEmptyBinsAndTheThreshold) {
  const pugi::xml_node svg = parse(svg_calibration(report_));
  ASSERT_TRUE(svg);
  std::map<std::string, int> rects;
  int64_t cmp01_fail_at_13 = 0;
  for (const pugi::xpath_node& n : svg.select_nodes("//rect[@class='bin']")) {
    const std::string gate = n.node().attribute("data-gate").value();
    ++rects[gate];
    if (gate == "CMP-01" && attr_int(n.node(), "data-bin") == 13)
      cmp01_fail_at_13 = attr_int(n.node(), "data-fail");
  }
  // CMP-01: bins 0 6 11 12 13; CMP-02: 8 16; ORD-02: 0 13; EXC-01 has no measured ratio.
  EXPECT_EQ(rects, (std::map<std::string, int>{{"CMP-01", 5}, {"CMP-02", 2}, {"ORD-02", 2}}));
  EXPECT_EQ(cmp01_fail_at_13, 1);
  ASSERT_EQ(svg.select_nodes("//line[@class='threshold']").size(), 1u);
  EXPECT_NE(svg_calibration(report_).find("3 unmeasured"), std::string::npos);
}

TEST_F(AuditFigures, DifferentialDrawsFourCellsPerGrid) {
  const pugi::xml_node svg = parse(svg_differential(report_));
  ASSERT_TRUE(svg);
  const pugi::xpath_node_set cells = svg.select_nodes("//rect[@class='cell']");
  EXPECT_EQ(cells.size(), 24u);  // (all, A, B) x (replica, original) x 4
  std::map<std::string, int64_t> overall_replica;
  for (const pugi::xpath_node& n : cells) {
    const pugi::xml_node c = n.node();
    if (std::string(c.attribute("data-judge").value()) == "replica" &&
        std::string(c.attribute("data-corpus").value()).empty())
      overall_replica[c.attribute("data-cell").value()] = attr_int(c, "data-count");
  }
  EXPECT_EQ(overall_replica, (std::map<std::string, int64_t>{{"both_accept", 2},
                                                             {"both_reject", 2},
                                                             {"kcv_accepts_other_rejects", 1},
                                                             {"kcv_rejects_other_accepts", 2}}));
}

TEST_F(AuditFigures, FiguresOfAnEmptyStoreAreStillWellFormed) {
  const std::string path = dir_.file("empty.db");
  audit::Store store = audit::Store::open(path).value();
  const AuditReport empty = build_report(store, path, Options{}).value();
  for (const std::string& svg :
       {svg_rigor_gap(empty), svg_calibration(empty), svg_differential(empty)}) {
    EXPECT_TRUE(parse(svg));
  }
}

TEST_F(AuditFigures, HtmlEmbedsTheThreeFiguresAndLoadsNothing) {
  const std::string html = render_report_html(report_);
  for (const char* id : {"fig-rigor-gap", "fig-calibration", "fig-differential"}) {
    const std::string open = std::string("<figure id=\"") + id + "\">\n<svg";
    EXPECT_NE(html.find(open), std::string::npos) << id;
  }
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  // The only URL is the SVG namespace name, which is never fetched.
  size_t at = 0, urls = 0;
  while ((at = html.find("http", at)) != std::string::npos) {
    EXPECT_EQ(html.compare(at, 26, "http://www.w3.org/2000/svg"), 0) << html.substr(at, 40);
    ++at;
    ++urls;
  }
  EXPECT_EQ(urls, 3u);
}

// A floor the store cannot give (no findings recorded) is a labelled row without a bar.
TEST_F(AuditFigures, AnUnavailableFloorDrawsNoBar) {
  AuditReport r = report_;
  r.profile_headline->judged.tf_floor.reset();
  r.profile_headline->replica_accepted.tf_floor.reset();
  const std::string text = svg_rigor_gap(r);
  const pugi::xml_node svg = parse(text);
  ASSERT_TRUE(svg);
  EXPECT_EQ(svg.select_nodes("//rect[@class='bar']").size(), 7u);
  EXPECT_TRUE(svg.select_nodes("//rect[@data-key='tf']").empty());
  EXPECT_NE(text.find(">unavailable<"), std::string::npos);
}

// The robustness table, the profile choice and the findings are HTML tables with every row.
TEST_F(AuditFigures, HtmlHasTheRobustnessAndFindingsTables) {
  const std::string html = render_report_html(report_);
  const size_t robustness = html.find("<h3 id=\"robustness\">");
  ASSERT_NE(robustness, std::string::npos);
  const size_t end = html.find("</table>", robustness);
  const std::string table = html.substr(robustness, end - robustness);
  for (const char* choice : {"as judged", "without determinism", "and without shape generality",
                             "and without layout generality"}) {
    EXPECT_NE(table.find(std::string("<tr><td>") + choice +
                         "</td><td class=\"n\">2/4 (50.0%)</td><td class=\"n\">1/4 (25.0%)</td>"),
              std::string::npos)
        << choice << "\n"
        << table;
  }
  EXPECT_NE(html.find("<h3 id=\"by-profile\">"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>fast-math</td><td class=\"n\">0/1 (0.0%)</td>"), std::string::npos);
  EXPECT_NE(html.find("<h3 id=\"findings\">"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>class_mismatch</td><td>yes</td><td class=\"n\">1/7 (14.3%)</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<tr><td>strict</td><td>replica-accepted</td><td class=\"n\">2/4 (50.0%)"),
            std::string::npos);
}

TEST_F(AuditFigures, HtmlEscapesStoreText) {
  const std::string html = render_report_html(report_);
  EXPECT_EQ(html.find(testing::kMarkupId), std::string::npos);
  EXPECT_NE(html.find("B/z&lt;x&gt;&amp;&quot;y&quot;/P9"), std::string::npos);
  EXPECT_NE(html.find("worker died: SIGSEGV"), std::string::npos);
  EXPECT_NE(html.find("id=\"reverse-cases\""), std::string::npos);
}

}  // namespace
}  // namespace kcv::audit_report
