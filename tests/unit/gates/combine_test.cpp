// File: tests/unit/gates/combine_test.cpp
// Folding per-probe results: fail > error > pass > n/a in any input order, the worst probe's
// evidence and failing probe survive, probes are counted.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "kcv/gate.hpp"

namespace kcv {
namespace {

GateResult result(Verdict v, double ratio, std::string label) {
  GateResult r;
  r.gate = GateId::kCmp01;
  r.verdict = v;
  r.evidence.worst_ratio = ratio;
  r.evidence.probe_label = label;
  r.probes_run = v == Verdict::kNotApplicable ? 0 : 1;
  if (v == Verdict::kFail) {
    Probe p;
    p.label = label;
    r.failing_probe = p;
  }
  if (v == Verdict::kError) r.reason = "oracle inconsistent";
  return r;
}

TEST(CombineResults, FailBeatsErrorBeatsPassBeatsNotApplicable) {
  std::vector<GateResult> all = {result(Verdict::kNotApplicable, 0, "na"), result(Verdict::kPass, 0.5, "pass"),
                                 result(Verdict::kError, 0, "error"), result(Verdict::kFail, 3, "fail")};
  std::sort(all.begin(), all.end(), [](const GateResult& a, const GateResult& b) {
    return a.evidence.probe_label < b.evidence.probe_label;
  });
  do {
    for (std::size_t n = 1; n <= all.size(); ++n) {
      std::vector<GateResult> some(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
      const GateResult r = combine_results(GateId::kOrd01, some);
      Verdict want = Verdict::kNotApplicable;
      for (Verdict v : {Verdict::kPass, Verdict::kError, Verdict::kFail}) {
        if (std::any_of(some.begin(), some.end(), [v](const GateResult& g) { return g.verdict == v; })) want = v;
      }
      EXPECT_EQ(r.verdict, want);
      EXPECT_EQ(r.gate, GateId::kOrd01);
    }
  } while (std::next_permutation(all.begin(), all.end(), [](const GateResult& a, const GateResult& b) {
    return a.evidence.probe_label < b.evidence.probe_label;
  }));
}

TEST(CombineResults, KeepsWorstFailingProbeAndCountsProbes) {
  const GateResult r = combine_results(GateId::kCmp01, {result(Verdict::kPass, 0.9, "p1"),
                                                        result(Verdict::kFail, 2, "mild"),
                                                        result(Verdict::kFail, std::numeric_limits<double>::infinity(), "worst"),
                                                        result(Verdict::kFail, 5, "bad")});
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.evidence.probe_label, "worst");
  ASSERT_TRUE(r.failing_probe.has_value());
  EXPECT_EQ(r.failing_probe->label, "worst");
  EXPECT_EQ(r.probes_run, 4);
}

TEST(CombineResults, PassReportsTightestMarginAndNoFailingProbe) {
  const GateResult r = combine_results(GateId::kCmp01, {result(Verdict::kPass, 0.1, "a"),
                                                        result(Verdict::kPass, 0.7, "b"),
                                                        result(Verdict::kPass, 0.7, "c")});
  EXPECT_EQ(r.verdict, Verdict::kPass);
  EXPECT_EQ(r.evidence.probe_label, "b");  // first of the tied worst
  EXPECT_FALSE(r.failing_probe.has_value());
}

TEST(CombineResults, ErrorKeepsItsReason) {
  const GateResult r = combine_results(GateId::kPrc02, {result(Verdict::kPass, 0.1, "a"),
                                                        result(Verdict::kError, 0, "e")});
  EXPECT_EQ(r.verdict, Verdict::kError);
  EXPECT_EQ(r.reason, "oracle inconsistent");
}

TEST(CombineResults, NoProbesIsNotApplicableWithReason) {
  const GateResult r = combine_results(GateId::kExc02, {});
  EXPECT_EQ(r.verdict, Verdict::kNotApplicable);
  EXPECT_FALSE(r.reason.empty());
  EXPECT_EQ(r.probes_run, 0);
}

TEST(VerdictName, NamesEveryVerdict) {
  EXPECT_EQ(verdict_name(Verdict::kPass), "pass");
  EXPECT_EQ(verdict_name(Verdict::kFail), "fail");
  EXPECT_EQ(verdict_name(Verdict::kNotApplicable), "not_applicable");
  EXPECT_EQ(verdict_name(Verdict::kError), "error");
}

}  // namespace
}  // namespace kcv
