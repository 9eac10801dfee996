// File: tests/unit/report/audit_report_test.cpp
// The audit report's model and JSON on the hand-computed store of audit_report_store.hpp: the
// headline over its three populations, the robustness and findings tables, per-gate rates with
// their denominators, both 2x2 differentials, the reverse cases one by one, the non-ok kernels,
// the margin histograms (right-closed log bins), the sample, and the terminal summary. Every
// expected number is derived in that header. Further stores: statuses in rows of their own (a
// runtime_error kernel is in no rate), and a store without findings, whose floor every
// rendering calls unavailable.
#include "kcv/audit_report.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "report/audit_report_internal.hpp"
#include "unit/audit/audit_fixtures.hpp"
#include "unit/report/audit_report_store.hpp"

namespace kcv::audit_report {
namespace {

class AuditReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("report.db");
    testing::write_report_store(path_);
    audit::StoreOptions ro;
    ro.read_only = true;
    store_.emplace(audit::Store::open(path_, ro).value());
    Options options;
    options.sample_per_stratum = 1;
    options.seed = 5;
    report_ = build_report(*store_, path_, options).value();
  }
  audit::testing::ScratchDir dir_;
  std::string path_;
  std::optional<audit::Store> store_;
  AuditReport report_;
};

TEST(MarginBin, BinsAreRightClosedDecadeHalves) {
  const MarginAxis axis;  // 1e-6 .. 1e6 in half decades: 24 bins
  ASSERT_EQ(axis.bins(), 24);
  EXPECT_EQ(margin_bin(axis, 0.0), 0);
  EXPECT_EQ(margin_bin(axis, 1e-6), 0);
  EXPECT_EQ(margin_bin(axis, 1.0), 12);  // ratio 1 sits on the passing side
  EXPECT_EQ(margin_bin(axis, 1.0000001), 13);
  EXPECT_EQ(margin_bin(axis, 3.0), 13);
  EXPECT_EQ(margin_bin(axis, 0.001), 6);
  EXPECT_EQ(margin_bin(axis, 1e6), 24);
  EXPECT_EQ(margin_bin(axis, 2e6), 25);
  EXPECT_EQ(margin_bin(axis, -1.0), 0);
}

void expect_rate(const audit::Rate& r, int64_t hits, int64_t total) {
  EXPECT_EQ(r.hits, hits);
  EXPECT_EQ(r.total, total);
}

void expect_rate(const std::optional<audit::Rate>& r, int64_t hits, int64_t total) {
  ASSERT_TRUE(r.has_value()) << "rate unavailable, want " << hits << "/" << total;
  expect_rate(*r, hits, total);
}

TEST_F(AuditReportTest, HeadlineRatesCarryTheirDenominators) {
  EXPECT_EQ(report_.kernels, 10);
  ASSERT_TRUE(report_.profile_headline.has_value());
  const audit::ProfileHeadline& h = *report_.profile_headline;
  expect_rate(h.judged.any_violation, 4, 7);  // k8 timed out
  expect_rate(h.judged.tf_floor, 2, 7);       // k3's nondeterminism is not declared
  expect_rate(h.replica_accepted.any_violation, 2, 4);
  expect_rate(h.replica_accepted.tf_floor, 1, 4);
  expect_rate(h.original_accepted.any_violation, 2, 2);
  expect_rate(h.original_accepted.tf_floor, 1, 2);
  std::map<std::string, audit::GateRate> gates;
  for (const audit::GateRate& g : report_.gates) gates[g.gate] = g;
  ASSERT_EQ(gates.size(), 4u);
  expect_rate(gates["CMP-01"].fail, 1, 6);
  expect_rate(gates["CMP-01"].fail_replica_accepted, 1, 4);
  EXPECT_EQ(gates["CMP-01"].errors, 1);
  EXPECT_EQ(gates["EXC-01"].fail.total, 3);
  EXPECT_EQ(gates["ORD-02"].not_applicable, 1);
}

TEST_F(AuditReportTest, RobustnessAndFindingsOfTheChosenProfile) {
  ASSERT_EQ(report_.robustness.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(report_.robustness[i].choice, audit::kContractChoices[i]);
    expect_rate(report_.robustness[i].any_violation, 2, 4);  // k1 k2 of k1 k2 k4 k9
    expect_rate(report_.robustness[i].tf_floor, 1, 4);
  }
  ASSERT_EQ(report_.by_profile.size(), 2u);  // fast-math, strict: the profile choice
  EXPECT_EQ(report_.by_profile[0].profile, "fast-math");
  expect_rate(report_.by_profile[0].any_violation, 0, 1);
  expect_rate(report_.by_profile[1].tf_floor, 1, 4);
  std::map<std::string, audit::FindingCount> findings;
  for (const audit::FindingCount& f : report_.findings) {
    EXPECT_EQ(f.profile, "strict");
    findings[finding_label(f.finding)] = f;
  }
  EXPECT_EQ(findings.size(), kAllFindings.size() - 1);
  expect_rate(findings["value_over_bound"].judged, 1, 7);
  expect_rate(findings["input_modified"].replica_accepted, 1, 4);
  expect_rate(findings["nondeterministic"].judged, 1, 7);
  expect_rate(findings["nondeterministic"].replica_accepted, 0, 4);
  expect_rate(findings["class_mismatch"].judged, 1, 7);
  expect_rate(findings["call_failed"].judged, 0, 7);
}

TEST_F(AuditReportTest, DifferentialsMatchTheHandCount) {
  ASSERT_EQ(report_.vs_replica.size(), 3u);  // all, A, B
  const audit::Differential& r = report_.vs_replica[0];
  EXPECT_EQ(r.both_accept, 2);
  EXPECT_EQ(r.kcv_rejects_other_accepts, 2);
  EXPECT_EQ(r.kcv_accepts_other_rejects, 1);
  EXPECT_EQ(r.both_reject, 2);
  EXPECT_EQ(r.excluded, 3);
  const audit::Differential& o = report_.vs_original[0];
  EXPECT_EQ(o.both_accept, 0);
  EXPECT_EQ(o.kcv_rejects_other_accepts, 2);
  EXPECT_EQ(o.kcv_accepts_other_rejects, 2);
  EXPECT_EQ(o.both_reject, 2);
  EXPECT_EQ(o.excluded, 4);
  EXPECT_EQ(rigor_gap(r).hits, 2);
  EXPECT_EQ(rigor_gap(r).total, 4);
}

TEST_F(AuditReportTest, EveryReverseCaseIsListedWithWhoRejectedIt) {
  ASSERT_EQ(report_.reverse_cases.size(), 2u);
  const ReverseCase& k5 = report_.reverse_cases[0];
  EXPECT_EQ(k5.kernel_id, "B/k5");
  EXPECT_EQ(k5.rejected_by, (std::vector<std::string>{"replica", "original"}));
  ASSERT_EQ(k5.gates.size(), 1u);
  EXPECT_EQ(k5.gates[0].verdict, "pass");
  const ReverseCase& k9 = report_.reverse_cases[1];
  EXPECT_EQ(k9.kernel_id, testing::kMarkupId);
  EXPECT_EQ(k9.rejected_by, (std::vector<std::string>{"original"}));
  EXPECT_EQ(k9.replica_verdict, "accepted");
  // The list agrees with the 2x2 cells it explains.
  int64_t by_replica = 0, by_original = 0;
  for (const ReverseCase& c : report_.reverse_cases) {
    for (const std::string& j : c.rejected_by) ++(j == "replica" ? by_replica : by_original);
  }
  EXPECT_EQ(by_replica, report_.vs_replica[0].kcv_accepts_other_rejects);
  EXPECT_EQ(by_original, report_.vs_original[0].kcv_accepts_other_rejects);
}

TEST_F(AuditReportTest, ReverseCasesGetHarnessTextFromTheCorpus) {
  nlohmann::json row = audit::testing::toy_row("B/k5");
  row["original_harness"] = "allclose(atol=1e-2) FAILED";
  const std::string corpus = dir_.file("b.jsonl");
  {
    std::ofstream out(corpus);
    out << row.dump() << "\n"
        << "{not json\n";
  }
  Options options;
  options.corpora = {corpus};
  const AuditReport r = build_report(*store_, path_, options).value();
  ASSERT_EQ(r.reverse_cases.size(), 2u);
  EXPECT_EQ(r.reverse_cases[0].original_harness, "allclose(atol=1e-2) FAILED");
  EXPECT_FALSE(r.reverse_cases[1].original_harness.has_value());
  options.corpora = {dir_.file("missing.jsonl")};
  EXPECT_FALSE(build_report(*store_, path_, options).has_value());
}

TEST_F(AuditReportTest, NonOkKernelsAreListed) {
  std::map<std::string, std::string> bad;
  for (const BadKernel& b : report_.bad_kernels) bad[b.kernel_id] = b.status;
  EXPECT_EQ(bad, (std::map<std::string, std::string>{
                     {"B/k10", "malformed"}, {"B/k6", "crash"}, {"B/k8", "timeout"}}));
}

TEST_F(AuditReportTest, MarginsBinEachGatesWorstRatios) {
  ASSERT_EQ(report_.margins.size(), 4u);
  const MarginRow& cmp01 = report_.margins[0];
  ASSERT_EQ(cmp01.gate, "CMP-01");
  EXPECT_EQ(cmp01.measured, 7);
  EXPECT_EQ(cmp01.unmeasured, 0);
  EXPECT_EQ(cmp01.above_threshold, 1);
  EXPECT_EQ(cmp01.pass[0], 1);   // 1e-7
  EXPECT_EQ(cmp01.pass[6], 1);   // 0.001
  EXPECT_EQ(cmp01.pass[11], 2);  // 0.2, 0.3
  EXPECT_EQ(cmp01.pass[12], 2);  // 0.5, 1.0
  EXPECT_EQ(cmp01.fail[13], 1);  // 3.0
  EXPECT_DOUBLE_EQ(*cmp01.median, 0.3);
  EXPECT_DOUBLE_EQ(*cmp01.max, 3.0);
  const MarginRow& exc01 = report_.margins[2];
  ASSERT_EQ(exc01.gate, "EXC-01");
  EXPECT_EQ(exc01.measured, 0);
  EXPECT_EQ(exc01.unmeasured, 3);
  EXPECT_FALSE(exc01.median.has_value());
}

TEST_F(AuditReportTest, SampleTakesOnePerStratum) {
  std::map<std::string, int> per;
  for (const SampleEntry& e : report_.sample) ++per[e.stratum];
  EXPECT_EQ(per, (std::map<std::string, int>{{"A/violation", 1},
                                             {"B/clean", 1},
                                             {"B/crash", 1},
                                             {"B/malformed", 1},
                                             {"B/timeout", 1},
                                             {"B/violation", 1}}));
  for (const SampleEntry& e : report_.sample) {
    if (e.stratum == "B/violation") {
      EXPECT_EQ(e.failing_gates, (std::vector<std::string>{"EXC-01"}));
    }
  }
}

TEST_F(AuditReportTest, JsonCarriesTheSameNumbers) {
  const nlohmann::json j = nlohmann::json::parse(render_report_json(report_));
  EXPECT_EQ(j["schema"], "kcv-audit-report");
  EXPECT_EQ(j["headline"]["kernels"], 10);
  EXPECT_EQ(j["headline"]["statuses"]["crash"], 1);
  EXPECT_EQ(j["headline"]["statuses"]["ok"], 7);
  EXPECT_EQ(j["headline"]["statuses_by_corpus"]["A"]["ok"], 3);
  EXPECT_EQ(j["headline"]["statuses_by_corpus"]["B"]["ok"], 4);
  EXPECT_EQ(j["headline"]["statuses_by_corpus"]["B"]["timeout"], 1);
  EXPECT_EQ(j["schema_version"], 2);
  const nlohmann::json& strict = j["headline"]["profiles"][1];
  EXPECT_EQ(strict["profile"], "strict");
  EXPECT_EQ(strict["judged"]["any_violation"]["hits"], 4);
  EXPECT_EQ(strict["judged"]["any_violation"]["total"], 7);
  EXPECT_DOUBLE_EQ(strict["judged"]["tolerance_free_floor"]["value"].get<double>(), 2.0 / 7.0);
  EXPECT_EQ(strict["replica_accepted"]["tolerance_free_floor"]["hits"], 1);
  EXPECT_EQ(strict["original_accepted"]["any_violation"]["total"], 2);
  EXPECT_EQ(strict["floor_available"], true);
  EXPECT_EQ(strict["untyped_kernels"], 0);
  const nlohmann::json& robustness = j["headline"]["robustness"];
  ASSERT_EQ(robustness.size(), 8u);  // two profiles, four choices
  EXPECT_EQ(robustness[4]["profile"], "strict");
  EXPECT_EQ(robustness[4]["choice"], "as_judged");
  EXPECT_EQ(robustness[7]["choice"], "without_layout");
  EXPECT_EQ(robustness[7]["tolerance_free_floor"]["hits"], 1);
  const nlohmann::json& findings = j["headline"]["findings"];
  ASSERT_EQ(findings.size(), 2 * (kAllFindings.size() - 1));
  EXPECT_EQ(findings[0]["finding"], "call_failed");
  EXPECT_EQ(findings[0]["tolerance_free"], true);
  EXPECT_EQ(j["headline"]["status_rows"][0]["status"], "crash");
  EXPECT_EQ(j["headline"]["gates"][0]["profile"], "fast-math");
  EXPECT_EQ(j["headline"]["gates"][0]["fail_replica_accepted"]["total"], 1);  // k1
  size_t tf_findings = 0;
  for (Finding f : kAllFindings) tf_findings += is_tolerance_free(f) ? 1 : 0;
  EXPECT_EQ(j["headline"]["tolerance_free_findings"].size(), tf_findings);
  EXPECT_EQ(j["headline"]["tolerance_free_findings"][0], "call_failed");
  const nlohmann::json& rep = j["differential"]["replica"][0];
  EXPECT_TRUE(rep["corpus"].is_null());
  EXPECT_EQ(rep["kcv_rejects_other_accepts"], 2);
  EXPECT_EQ(rep["rigor_gap"]["total"], 4);
  EXPECT_EQ(j["differential"]["original"][0]["excluded"], 4);
  ASSERT_EQ(j["reverse_cases"].size(), 2u);
  EXPECT_EQ(j["reverse_cases"][1]["kernel_id"], testing::kMarkupId);
  EXPECT_TRUE(j["reverse_cases"][0]["original_harness"].is_null());
  EXPECT_EQ(j["reverse_cases"][0]["gates"][0]["summary"], "tightest element within tau");
  EXPECT_EQ(j["bad_kernels"].size(), 3u);
  EXPECT_EQ(j["hand_audit_sample"].size(), 6u);
  for (const nlohmann::json& e : j["hand_audit_sample"]) {
    if (e["stratum"] == "B/violation") {
      EXPECT_EQ(e["failing_findings"], nlohmann::json::array({"class_mismatch"}));
    }
  }
  const nlohmann::json& cmp01 = j["calibration_margins"]["gates"][0];
  EXPECT_EQ(cmp01["gate"], "CMP-01");
  EXPECT_EQ(cmp01["pass"].size(), 26u);
  EXPECT_EQ(cmp01["fail"][13], 1);
}

TEST_F(AuditReportTest, TerminalSummaryShowsHeadlineAndReverseCases) {
  const std::string text = render_report_text(report_);
  EXPECT_NE(text.find("4/7 (57.1%)"), std::string::npos) << text;
  EXPECT_NE(text.find("2/7 (28.6%)"), std::string::npos) << text;
  EXPECT_NE(text.find("reverse cases (kcv accepts, another judge rejects): 2"), std::string::npos);
  EXPECT_NE(text.find("B/k5  rejected by replica,original"), std::string::npos) << text;
  // each reverse case with what kcv saw: CMP-01's evidence summary
  EXPECT_NE(text.find("      kcv CMP-01: tightest element within tau\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("kernels not ok: 3"), std::string::npos);
  EXPECT_NE(text.find("  crash                   1                 0                  0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("strict         judged                        4/7 (57.1%)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("               replica-accepted              2/4 (50.0%)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("and without layout generality"), std::string::npos) << text;
  EXPECT_NE(text.find("class_mismatch         TF"), std::string::npos) << text;
  EXPECT_EQ(text.find("unavailable"), std::string::npos) << text;
  EXPECT_NE(text.find("  A: 3 of 3 final (ok 3)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  B: 7 of 7 final (crash 1, malformed 1, ok 4, timeout 1)\n"),
            std::string::npos)
      << text;
}

TEST_F(AuditReportTest, UnknownProfileGivesEmptyRatesNotAnError) {
  Options options;
  options.profile = "nope";
  const AuditReport r = build_report(*store_, path_, options).value();
  EXPECT_FALSE(r.profile_headline.has_value());
  EXPECT_TRUE(r.gates.empty());
  EXPECT_TRUE(r.reverse_cases.empty());
  EXPECT_EQ(r.vs_replica[0].excluded, 10);
  EXPECT_NE(render_report_text(r).find("no kernel was judged under profile nope"),
            std::string::npos);
}

// A kernel that timed out with passes only (the audit's three such kernels of 2026-11-29) is no
// reverse case: its battery did not finish, so kcv accepted nothing. It is still listed as not ok.
TEST(AuditReportUnfinished, AStoppedBatteryIsNoReverseCase) {
  audit::testing::ScratchDir dir;
  const std::string path = dir.file("u.db");
  {
    audit::Store store = audit::Store::open(path).value();
    const int64_t run = store.begin_run({}).value();
    ASSERT_TRUE(store.enqueue({audit::testing::toy_kernel("slow")}).ok());
    audit::KernelOutcome o{"slow",
                           audit::KernelStatus::kTimeout,
                           "kernel time limit reached",
                           std::string("rejected"),
                           {}};
    o.verdicts.push_back({"CMP-01", "strict", "pass"});
    ASSERT_TRUE(store.record(o, run).ok());
  }
  audit::StoreOptions ro;
  ro.read_only = true;
  const audit::Store store = audit::Store::open(path, ro).value();
  const AuditReport r = build_report(store, path, Options{}).value();
  EXPECT_TRUE(r.reverse_cases.empty());
  ASSERT_EQ(r.bad_kernels.size(), 1u);
  EXPECT_EQ(r.bad_kernels[0].kernel_id, "slow");
  EXPECT_EQ(r.vs_replica[0].excluded, 1);
}

// The report of a store that recorded `outcomes`, each kernel enqueued first, read only.
AuditReport report_of_recorded(const audit::testing::ScratchDir& dir,
                               const std::vector<audit::KernelOutcome>& outcomes) {
  const std::string path = dir.file("r.db");
  {
    audit::Store store = audit::Store::open(path).value();
    const int64_t run = store.begin_run({}).value();
    std::vector<audit::KernelInfo> kernels;
    for (const audit::KernelOutcome& o : outcomes)
      kernels.push_back(audit::testing::toy_kernel(o.kernel_id));
    EXPECT_TRUE(store.enqueue(kernels).ok());
    for (const audit::KernelOutcome& o : outcomes) EXPECT_TRUE(store.record(o, run).ok());
  }
  audit::StoreOptions ro;
  ro.read_only = true;
  const audit::Store store = audit::Store::open(path, ro).value();
  return build_report(store, path, Options{}).value();
}

// A kernel whose only verdict is CMP-01's, under strict, with `evidence`.
audit::KernelOutcome one_verdict(const std::string& id, const std::string& verdict,
                                 const std::string& evidence) {
  audit::KernelOutcome o{id, audit::KernelStatus::kOk, "", std::string("accepted"), {}};
  audit::VerdictRecord v{"CMP-01", "strict", verdict};
  v.evidence_json = evidence;
  o.verdicts.push_back(v);
  return o;
}

// Kernels whose battery ran at a reduced shape (kcv audit --reduce-over-gb), and kernels with
// probes the candidate could not run on this machine, are counted in the text, the JSON and the
// page; a store without them says nothing of either (JSON: 0).
TEST(AuditReportKernelNotes, ReducedShapesAndProbesNotRunHereAreCountedEverywhere) {
  audit::testing::ScratchDir dir;
  const AuditReport r = report_of_recorded(
      dir, {one_verdict("big", "pass", R"({"battery_shape": {"reduced": "batch_size=64"}})"),
            one_verdict("small", "pass", "{}"),
            one_verdict("short", "error", R"({"probes_not_run": 4})")});
  EXPECT_EQ(r.headline.reduced_shape, 1);
  EXPECT_EQ(r.headline.not_run_here, 1);
  const nlohmann::json headline = nlohmann::json::parse(render_report_json(r))["headline"];
  EXPECT_EQ(headline["reduced_shape_kernels"], 1);
  EXPECT_EQ(headline["not_run_here_kernels"], 1);
  for (const std::string sentence : {"1 kernel(s) judged at a reduced shape",
                                     "1 kernel(s) with probes the candidate could not run"}) {
    EXPECT_NE(render_report_text(r).find(sentence), std::string::npos) << render_report_text(r);
    EXPECT_NE(render_report_html(r).find(sentence), std::string::npos);
  }
}

TEST_F(AuditReportTest, NoReducedShapeNoSentence) {
  EXPECT_EQ(render_report_text(report_).find("reduced shape"), std::string::npos);
  EXPECT_EQ(render_report_text(report_).find("could not run on this machine"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(render_report_json(report_))["headline"]["not_run_here_kernels"],
            0);
  EXPECT_EQ(nlohmann::json::parse(render_report_json(report_))["headline"]["reduced_shape_kernels"],
            0);
}

// A store with one judged kernel and one of each status a candidate can end in at the reference
// shape (kept with the fail it was recorded with): the statuses are rows of their own and no
// rate counts them, in the model, the text, the JSON and the page.
TEST(AuditReportStatuses, AStatusIsARowOfItsOwnNeverAGateFailure) {
  audit::testing::ScratchDir dir;
  const std::string path = dir.file("s.db");
  {
    audit::Store store = audit::Store::open(path).value();
    const int64_t run = store.begin_run({}).value();
    for (const char* id : {"clean", "raises", "wrong-shape"})
      ASSERT_TRUE(store.enqueue({audit::testing::toy_kernel(id)}).ok());
    audit::KernelOutcome clean{"clean", audit::KernelStatus::kOk, "", std::string("accepted"), {}};
    clean.verdicts.push_back({"CMP-01", "strict", "pass"});
    ASSERT_TRUE(store.record(clean, run).ok());
    audit::KernelOutcome raises{"raises",
                                audit::KernelStatus::kRuntimeError,
                                "ValueError: shapes do not match",
                                std::string("accepted"),
                                {}};
    audit::VerdictRecord call{"CMP-01", "strict", "fail"};
    call.finding = Finding::kCallFailed;
    raises.verdicts.push_back(call);
    ASSERT_TRUE(store.record(raises, run).ok());
    ASSERT_TRUE(store
                    .record({"wrong-shape",
                             audit::KernelStatus::kBadOutput,
                             "output 0: [3] vs [4]",
                             std::string("rejected"),
                             {}},
                            run)
                    .ok());
  }
  audit::StoreOptions ro;
  ro.read_only = true;
  const audit::Store store = audit::Store::open(path, ro).value();
  const AuditReport r = build_report(store, path, Options{}).value();
  ASSERT_TRUE(r.profile_headline.has_value());
  expect_rate(r.profile_headline->judged.any_violation, 0, 1);
  expect_rate(r.profile_headline->replica_accepted.any_violation, 0, 1);
  for (const audit::GateRate& g : r.gates) expect_rate(g.fail, 0, 1);
  for (const audit::FindingCount& f : r.findings) EXPECT_EQ(f.judged.hits, 0);
  std::map<std::string, audit::StatusCount> statuses;
  for (const audit::StatusCount& s : r.headline.statuses) statuses[s.status] = s;
  EXPECT_EQ(statuses["runtime_error"].kernels, 1);
  EXPECT_EQ(statuses["runtime_error"].replica_accepted, 1);
  EXPECT_EQ(statuses["bad_output"].kernels, 1);
  EXPECT_EQ(statuses["bad_output"].replica_accepted, 0);
  ASSERT_EQ(r.bad_kernels.size(), 2u);
  EXPECT_EQ(r.vs_replica[0].excluded, 2);
  const std::string text = render_report_text(r);
  EXPECT_NE(text.find("  runtime_error           1                 1                  1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  bad_output              1"), std::string::npos) << text;
  const nlohmann::json j = nlohmann::json::parse(render_report_json(r));
  EXPECT_EQ(j["headline"]["statuses"]["runtime_error"], 1);
  EXPECT_EQ(j["headline"]["profiles"][0]["judged"]["any_violation"]["hits"], 0);
  const std::string html = render_report_html(r);
  EXPECT_NE(html.find("<tr><td>runtime_error</td><td class=\"n\">1</td><td class=\"n\">1</td>"),
            std::string::npos);
}

// A store recorded before findings were typed: each rendering says the floor is unavailable
// (text and page with the reason, JSON null with floor_available false); any violation stays.
TEST(AuditReportUntyped, AStoreWithoutFindingsShowsTheFloorAsUnavailable) {
  audit::testing::ScratchDir dir;
  const std::string path = dir.file("old.db");
  testing::write_report_store(path);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(
        sqlite3_exec(db, "UPDATE verdicts SET finding='', scope=''", nullptr, nullptr, nullptr),
        SQLITE_OK);
    sqlite3_close(db);
  }
  audit::StoreOptions ro;
  ro.read_only = true;
  const audit::Store store = audit::Store::open(path, ro).value();
  const AuditReport r = build_report(store, path, Options{}).value();
  ASSERT_TRUE(r.profile_headline.has_value());
  expect_rate(r.profile_headline->judged.any_violation, 4, 7);
  EXPECT_FALSE(r.profile_headline->judged.tf_floor.has_value());
  EXPECT_EQ(r.profile_headline->untyped_kernels, 4);  // k1 k2 k3 k7
  const std::string text = render_report_text(r);
  EXPECT_NE(text.find("4/7 (57.1%)                unavailable"), std::string::npos) << text;
  EXPECT_NE(text.find("the tolerance-free floor of strict is unavailable: 4 judged kernel(s)"),
            std::string::npos)
      << text;
  const nlohmann::json j = nlohmann::json::parse(render_report_json(r));
  const nlohmann::json& strict = j["headline"]["profiles"][1];
  EXPECT_TRUE(strict["judged"]["tolerance_free_floor"].is_null());
  EXPECT_EQ(strict["floor_available"], false);
  EXPECT_EQ(strict["untyped_kernels"], 4);
  EXPECT_EQ(j["headline"]["findings"].back()["finding"], nullptr);
  EXPECT_NE(text.find("(no finding)                          4/7 (57.1%)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("the rows above count typed fails only"), std::string::npos);
  EXPECT_NE(render_report_html(r).find("<td>unavailable</td>"), std::string::npos);
}

}  // namespace
}  // namespace kcv::audit_report
