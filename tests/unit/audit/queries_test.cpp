// File: tests/unit/audit/queries_test.cpp
// The report queries on a fourteen-kernel synthetic store whose every number is computed by hand
// in the comments below: the headline per profile over its three populations (judged,
// replica-accepted, original-accepted) from typed findings, the robustness table (the
// cumulative contract choices), per-finding counts, per-gate rates among judged kernels where
// the gate applies, per op class, statuses in rows of their own, the 2x2 differentials and the
// seeded sample. Further stores check the rules one at a time: statuses are never gate
// failures, a fail without a finding makes the floor unavailable (never a gate-based guess), a
// known scope still excludes such a fail under a robustness choice.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "audit/store_impl.hpp"
#include "audit_fixtures.hpp"

namespace kcv::audit {
namespace {

using testing::ScratchDir;

struct V {
  std::string gate, verdict;
  Finding finding = Finding::kNone;
  ProbeScope scope = ProbeScope::kReference;
};

struct Spec {
  std::string id, corpus, op_class;
  bool deterministic;
  std::optional<std::string> original, replica;
  KernelStatus status;
  std::vector<V> strict;
};

using F = Finding;
using S = ProbeScope;

// any = a judged kernel has a strict fail; floor = a fail with a tolerance-free finding
// (nondeterministic only when deterministic). rep = replica accepted; orig = original accepted.
// clang-format off
const std::vector<Spec> kSpecs = {
    // k1: value_over_bound only -> any, not floor. rep, orig.
    {"k1", "A", "elementwise", true, "accepted", "accepted", KernelStatus::kOk,
     {{"CMP-01", "fail", F::kValueOverBound}, {"CMP-02", "pass"}, {"ORD-02", "pass"},
      {"EXC-01", "pass"}}},
    // k2: input_modified -> any, floor. rep, orig.
    {"k2", "A", "reduction", true, "accepted", "accepted", KernelStatus::kOk,
     {{"CMP-01", "pass"}, {"CMP-02", "fail", F::kInputModified}}},
    // k3: nondeterministic without declared determinism -> any, not floor. Both others reject.
    {"k3", "A", "reduction", false, "rejected", "rejected", KernelStatus::kOk,
     {{"CMP-01", "pass"}, {"ORD-02", "fail", F::kNondeterministic, S::kRepeat}}},
    // k4: clean; original unknown. rep.
    {"k4", "B", "elementwise", true, std::nullopt, "accepted", KernelStatus::kOk,
     {{"CMP-01", "pass"}, {"EXC-01", "pass"}, {"ORD-02", "not_applicable"}}},
    // k5: clean, rejected by both others: the reverse case.
    {"k5", "B", "elementwise", true, "rejected", "rejected", KernelStatus::kOk,
     {{"CMP-01", "pass"}}},
    // k6: crashed, no verdicts: statuses only.
    {"k6", "B", "matmul", true, std::nullopt, std::nullopt, KernelStatus::kCrash, {}},
    // k7: class_mismatch -> any, floor; CMP-01 errors. Original compile_error = a rejection.
    {"k7", "B", "matmul", true, "compile_error", "rejected", KernelStatus::kOk,
     {{"EXC-01", "fail", F::kClassMismatch, S::kValues}, {"CMP-01", "error"}}},
    // k8: nondeterministic with determinism declared -> any, floor; gone without determinism.
    {"k8", "C", "elementwise", true, "accepted", "accepted", KernelStatus::kOk,
     {{"CMP-01", "pass"}, {"ORD-02", "fail", F::kNondeterministic, S::kRepeat}}},
    // k9: bad_output at another size -> any, floor; gone without shape generality.
    {"k9", "C", "elementwise", true, "accepted", "accepted", KernelStatus::kOk,
     {{"CMP-01", "pass"}, {"CMP-02", "fail", F::kBadOutput, S::kShape}}},
    // k10: two layout fails (one TF) -> any, floor; gone without layout generality.
    {"k10", "C", "matmul", true, "accepted", "accepted", KernelStatus::kOk,
     {{"CMP-03", "fail", F::kValueOverBound, S::kLayout},
      {"CMP-02", "fail", F::kWrittenOutside, S::kLayout}}},
    // k11: a shape fail and a reference-scope class_mismatch -> in every robustness row.
    {"k11", "C", "matmul", true, "accepted", "accepted", KernelStatus::kOk,
     {{"CMP-01", "fail", F::kValueOverBound, S::kShape},
      {"EXC-01", "fail", F::kClassMismatch, S::kReference}}},
    // k12: raised at the reference shape: statuses only, though both others accepted it.
    {"k12", "C", "elementwise", true, "accepted", "accepted", KernelStatus::kRuntimeError, {}},
    // k13: timed out after a fail: a status, so in no rate, no per-gate count, no 2x2 cell.
    {"k13", "C", "elementwise", true, "accepted", "accepted", KernelStatus::kTimeout,
     {{"CMP-01", "fail", F::kValueOverBound}}},
    // k14: ok, but every verdict errored or did not apply: not judged, counted apart.
    {"k14", "C", "elementwise", true, "accepted", "accepted", KernelStatus::kOk,
     {{"CMP-01", "error"}, {"EXC-01", "not_applicable"}}},
};
// clang-format on

// Strict: judged k1-k5 k7-k11 (10); any k1 k2 k3 k7 k8 k9 k10 k11 (8); floor k2 k7 k8 k9 k10
// k11 (6). Replica-accepted judged: k1 k2 k4 k8 k9 k10 k11 (7): any 6 (all but k4), floor 5
// (k2 k8 k9 k10 k11). Original-accepted judged: k1 k2 k8 k9 k10 k11 (6): any 6, floor 5.
// fast-math: k1 only, passing.

void record_specs(Store& store, const std::vector<Spec>& specs) {
  const int64_t run = store.begin_run({}).value();
  for (const Spec& s : specs) {
    KernelInfo info = testing::toy_kernel(s.id, s.corpus, s.op_class);
    info.determinism_declared = s.deterministic;
    info.original_verdict = s.original;
    ASSERT_TRUE(store.enqueue({info}).ok());
    KernelOutcome o{s.id, s.status, "", s.replica, {}};
    for (const V& v : s.strict) {
      VerdictRecord rec{v.gate, "strict", v.verdict};
      rec.finding = v.finding;
      rec.scope = v.scope;
      o.verdicts.push_back(rec);
    }
    if (s.id == "k1") o.verdicts.push_back({"CMP-01", "fast-math", "pass"});
    const Status st = store.record(o, run);
    ASSERT_TRUE(st.ok()) << st.error().to_string();
  }
}

class Queries : public ::testing::Test {
 protected:
  void SetUp() override {
    Store store = Store::open(dir_.file("q.db")).value();
    record_specs(store, kSpecs);
    store_.emplace(std::move(store));
    h_ = headline(*store_).value();
  }
  const ProfileHeadline& profile(const std::string& name) const {
    for (const ProfileHeadline& p : h_.profiles) {
      if (p.profile == name) return p;
    }
    throw std::runtime_error("no profile " + name);
  }
  ScratchDir dir_;
  std::optional<Store> store_;
  Headline h_;
};

void expect_rate(const Rate& r, int64_t hits, int64_t total) {
  EXPECT_EQ(r.hits, hits);
  EXPECT_EQ(r.total, total);
}

void expect_rate(const std::optional<Rate>& r, int64_t hits, int64_t total) {
  ASSERT_TRUE(r.has_value()) << "rate unavailable, want " << hits << "/" << total;
  expect_rate(*r, hits, total);
}

TEST_F(Queries, ToleranceFreeGatesAreTheSixOfTheIssue) {
  EXPECT_EQ(tolerance_free_gates(),
            (std::vector<std::string>{"CMP-02", "ORD-02", "EXC-01", "EXC-02", "RES-01", "RES-02"}));
}

// A partial audit: the kernels a run has not finished show per corpus, apart from the final ones.
TEST_F(Queries, HeadlineCountsStatusesPerCorpus) {
  ASSERT_TRUE(store_->enqueue({testing::toy_kernel("k99", "D", "elementwise")}).ok());
  const Headline h = headline(*store_).value();
  std::map<std::pair<std::string, std::string>, int64_t> want;
  for (const Spec& s : kSpecs) ++want[{s.corpus, std::string(status_name(s.status))}];
  want[{"D", "pending"}] = 1;
  std::map<std::pair<std::string, std::string>, int64_t> got;
  for (const CorpusStatusCount& c : h.corpus_statuses) got[{c.corpus, c.status}] = c.kernels;
  EXPECT_EQ(got, want);
  ASSERT_FALSE(h.corpus_statuses.empty());
  EXPECT_EQ(h.corpus_statuses.back().corpus, "D");  // ordered by corpus
}

// Each status in a row of its own, with how many of its kernels each other judge accepted.
TEST_F(Queries, StatusesAreRowsOfTheirOwn) {
  std::map<std::string, StatusCount> got;
  for (const StatusCount& s : h_.statuses) got[s.status] = s;
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got["ok"].kernels, 11);           // k1-k5 k7-k11 k14
  EXPECT_EQ(got["ok"].replica_accepted, 8);   // k1 k2 k4 k8 k9 k10 k11 k14
  EXPECT_EQ(got["ok"].original_accepted, 7);  // k1 k2 k8 k9 k10 k11 k14
  EXPECT_EQ(got["crash"].kernels, 1);
  EXPECT_EQ(got["crash"].replica_accepted, 0);
  EXPECT_EQ(got["runtime_error"].kernels, 1);
  EXPECT_EQ(got["runtime_error"].replica_accepted, 1);
  EXPECT_EQ(got["timeout"].original_accepted, 1);
}

TEST_F(Queries, HeadlineOverThreePopulations) {
  ASSERT_EQ(h_.profiles.size(), 2u);  // fast-math, strict (sorted)
  EXPECT_EQ(h_.profiles[0].profile, "fast-math");
  expect_rate(h_.profiles[0].judged.any_violation, 0, 1);
  expect_rate(h_.profiles[0].judged.tf_floor, 0, 1);
  const ProfileHeadline& strict = profile("strict");
  expect_rate(strict.judged.any_violation, 8, 10);
  expect_rate(strict.judged.tf_floor, 6, 10);  // not k1 (a bound), not k3 (undeclared)
  expect_rate(strict.replica_accepted.any_violation, 6, 7);
  expect_rate(strict.replica_accepted.tf_floor, 5, 7);
  expect_rate(strict.original_accepted.any_violation, 6, 6);
  expect_rate(strict.original_accepted.tf_floor, 5, 6);
  EXPECT_EQ(strict.untyped_kernels, 0);
  EXPECT_EQ(strict.unjudged_ok, 1);  // k14
}

TEST_F(Queries, RobustnessLeavesOutOneMoreChoicePerRow) {
  std::vector<RobustnessRow> strict;
  for (const RobustnessRow& r : h_.robustness) {
    if (r.profile == "strict") strict.push_back(r);
  }
  ASSERT_EQ(strict.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(strict[i].choice, kContractChoices[i]);
  // Among k1 k2 k4 k8 k9 k10 k11.
  expect_rate(strict[0].any_violation, 6, 7);  // as judged
  expect_rate(strict[0].tf_floor, 5, 7);
  expect_rate(strict[1].any_violation, 5, 7);  // k8's nondeterminism left out
  expect_rate(strict[1].tf_floor, 4, 7);
  expect_rate(strict[2].any_violation, 4, 7);  // k9's shape fail; k11 keeps its reference one
  expect_rate(strict[2].tf_floor, 3, 7);
  expect_rate(strict[3].any_violation, 3, 7);  // k10's layout fails: k1 k2 k11 remain
  expect_rate(strict[3].tf_floor, 2, 7);       // k2 k11
  EXPECT_EQ(h_.robustness.size(), 8u);         // fast-math's four rows too
  expect_rate(h_.robustness[3].any_violation, 0, 1);
  EXPECT_EQ(contract_choice_name(ContractChoice::kNoLayout), "without_layout");
}

TEST_F(Queries, FindingCountsKernelsPerFinding) {
  std::map<std::string, FindingCount> strict;
  for (const FindingCount& f : h_.findings) {
    if (f.profile != "strict") continue;
    ASSERT_TRUE(f.finding.has_value());  // every fail of this store names its finding
    strict[std::string(finding_name(*f.finding))] = f;
  }
  EXPECT_EQ(strict.size(), kAllFindings.size() - 1);      // every finding but none, zeros included
  expect_rate(strict["value_over_bound"].judged, 3, 10);  // k1 k10 k11 (k13 is not judged)
  expect_rate(strict["value_over_bound"].replica_accepted, 3, 7);
  expect_rate(strict["class_mismatch"].judged, 2, 10);  // k7 k11
  expect_rate(strict["class_mismatch"].replica_accepted, 1, 7);
  expect_rate(strict["nondeterministic"].judged, 2, 10);  // k3 k8: the count ignores declarations
  expect_rate(strict["bad_output"].judged, 1, 10);
  expect_rate(strict["written_outside"].judged, 1, 10);
  expect_rate(strict["input_modified"].judged, 1, 10);
  expect_rate(strict["call_failed"].judged, 0, 10);  // k12's exception is a status
  expect_rate(strict["tool_report"].judged, 0, 10);
}

TEST_F(Queries, GateRatesCountJudgedKernelsWhereTheGateApplies) {
  std::map<std::string, GateRate> strict;
  for (const GateRate& g : h_.gates) {
    if (g.profile == "strict") strict[g.gate] = g;
  }
  expect_rate(strict["CMP-01"].fail, 2, 8);  // k1 k11 of k1-k5 k8 k9 k11; k13 timed out
  expect_rate(strict["CMP-01"].fail_replica_accepted, 2, 6);  // k1 k2 k4 k8 k9 k11
  EXPECT_EQ(strict["CMP-01"].errors, 2);                      // k7 k14
  expect_rate(strict["CMP-02"].fail, 3, 4);
  expect_rate(strict["CMP-03"].fail, 1, 1);
  expect_rate(strict["EXC-01"].fail, 2, 4);
  expect_rate(strict["EXC-01"].fail_replica_accepted, 1, 3);
  EXPECT_EQ(strict["EXC-01"].not_applicable, 1);
  expect_rate(strict["ORD-02"].fail, 2, 3);
  expect_rate(strict["ORD-02"].fail_replica_accepted, 1, 2);
  EXPECT_EQ(strict["ORD-02"].not_applicable, 1);
}

TEST_F(Queries, PerOpClass) {
  std::map<std::string, ClassRate> strict;
  for (const ClassRate& c : h_.classes) {
    if (c.profile == "strict") strict[c.op_class] = c;
  }
  expect_rate(strict["elementwise"].judged.any_violation, 3, 5);  // k1 k8 k9 of k1 k4 k5 k8 k9
  expect_rate(strict["elementwise"].judged.tf_floor, 2, 5);       // k8 k9
  expect_rate(strict["reduction"].judged.any_violation, 2, 2);
  expect_rate(strict["reduction"].judged.tf_floor, 1, 2);    // k2
  expect_rate(strict["matmul"].judged.any_violation, 3, 3);  // k7 k10 k11; k6 crashed
  expect_rate(strict["matmul"].judged.tf_floor, 3, 3);
}

// A battery run at a reduced shape marks every verdict (evidence battery_shape); the headline
// counts kernels, not verdicts, and none in a store without such verdicts.
TEST_F(Queries, ReducedShapeCountsKernelsWhoseVerdictsNameOne) {
  EXPECT_EQ(h_.reduced_shape, 0);
  ASSERT_TRUE(store_->enqueue({testing::toy_kernel("k98", "B", "elementwise")}).ok());
  const int64_t run = store_->begin_run({}).value();
  KernelOutcome o{"k98", KernelStatus::kOk, "", "accepted", {}};
  for (const char* gate : {"CMP-01", "EXC-01"}) {
    VerdictRecord v{gate, "strict", "pass"};
    v.evidence_json = R"({"battery_shape":{"reduced":"batch_size=2"}})";
    o.verdicts.push_back(v);
  }
  ASSERT_TRUE(store_->record(o, run).ok());
  EXPECT_EQ(headline(*store_).value().reduced_shape, 1);
}

// A gate that could not run the candidate at some probes (evidence probes_not_run) marks its
// kernel; the headline counts kernels, and none in a store without such verdicts.
TEST_F(Queries, NotRunHereCountsKernelsWithProbesTheCandidateCouldNotRun) {
  EXPECT_EQ(h_.not_run_here, 0);
  ASSERT_TRUE(store_->enqueue({testing::toy_kernel("k97", "B", "elementwise")}).ok());
  const int64_t run = store_->begin_run({}).value();
  KernelOutcome o{"k97", KernelStatus::kOk, "", "accepted", {}};
  VerdictRecord v{"CMP-01", "strict", "error", "not judged at every probe: 2 probe(s) ..."};
  v.evidence_json = R"({"probes": 3, "probes_refused": 0, "probes_not_run": 2})";
  o.verdicts.push_back(v);
  VerdictRecord judged{"EXC-01", "strict", "pass"};
  judged.evidence_json = R"({"probes": 3, "probes_refused": 0})";
  o.verdicts.push_back(judged);
  ASSERT_TRUE(store_->record(o, run).ok());
  EXPECT_EQ(headline(*store_).value().not_run_here, 1);
}

void expect_2x2(const Differential& d, int64_t both_accept, int64_t gap, int64_t reverse,
                int64_t both_reject, int64_t excluded) {
  SCOPED_TRACE(d.against + " corpus '" + d.corpus + "'");
  EXPECT_EQ(d.both_accept, both_accept);
  EXPECT_EQ(d.kcv_rejects_other_accepts, gap);
  EXPECT_EQ(d.kcv_accepts_other_rejects, reverse);
  EXPECT_EQ(d.both_reject, both_reject);
  EXPECT_EQ(d.excluded, excluded);
}

TEST_F(Queries, DifferentialAgainstReplicaAndOriginal) {
  const std::vector<Differential> replica = differential(*store_, "strict", "replica").value();
  ASSERT_EQ(replica.size(), 4u);          // all, A, B, C
  expect_2x2(replica[0], 1, 6, 1, 2, 4);  // excluded: k6 k12 k13 k14
  expect_2x2(replica[1], 0, 2, 0, 1, 0);  // A: k1 k2 gap, k3 both reject
  expect_2x2(replica[2], 1, 0, 1, 1, 1);  // B: k4, k5 reverse, k7, k6 excluded
  expect_2x2(replica[3], 0, 4, 0, 0, 3);  // C: k8-k11 gap; k12 k13 k14 excluded
  const std::vector<Differential> original = differential(*store_, "strict", "original").value();
  expect_2x2(original[0], 0, 6, 1, 2, 5);  // k4 has no original verdict
  EXPECT_FALSE(differential(*store_, "strict", "nobody").has_value());
}

// The replica 2x2 and the replica-accepted headline count the same kernels the same way: a
// reviewer can reconcile the two tables cell by cell.
TEST_F(Queries, ReplicaDifferentialAgreesWithTheReplicaAcceptedHeadline) {
  const Differential d = differential(*store_, "strict", "replica").value()[0];
  const ProfileHeadline& strict = profile("strict");
  EXPECT_EQ(d.kcv_rejects_other_accepts, strict.replica_accepted.any_violation.hits);
  EXPECT_EQ(d.both_accept + d.kcv_rejects_other_accepts,
            strict.replica_accepted.any_violation.total);
}

TEST_F(Queries, SampleIsStratifiedAndSeeded) {
  const std::vector<SampleItem> a = hand_audit_sample(*store_, "strict", 2, 99).value();
  std::map<std::string, int> per;
  for (const SampleItem& s : a) ++per[s.stratum];
  EXPECT_EQ(per, (std::map<std::string, int>{{"A/violation", 2},
                                             {"B/clean", 2},
                                             {"B/crash", 1},
                                             {"B/violation", 1},
                                             {"C/runtime_error", 1},
                                             {"C/timeout", 1},
                                             {"C/unjudged", 1},
                                             {"C/violation", 2}}));
  const std::vector<SampleItem> b = hand_audit_sample(*store_, "strict", 2, 99).value();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].kernel_id, b[i].kernel_id);
  // The A/violation pick is the two smallest FNV-1a("99:<id>") among k1 k2 k3.
  std::vector<std::pair<uint64_t, std::string>> ranked;
  for (const char* id : {"k1", "k2", "k3"})
    ranked.emplace_back(fnv1a64(std::string("99:") + id), id);
  std::sort(ranked.begin(), ranked.end());
  EXPECT_EQ(a[0].kernel_id, ranked[0].second);
  EXPECT_EQ(a[1].kernel_id, ranked[1].second);
}

// A battery that stopped (timeout, crash) is a status: its passes accept nothing and its fails
// reject nothing, so the kernel is in no rate, no per-gate count and no 2x2 cell.
TEST(QueriesStatuses, AKernelThatDidNotFinishIsAStatusNotAGateFailure) {
  ScratchDir dir;
  Store store = Store::open(dir.file("u.db")).value();
  const int64_t run = store.begin_run({}).value();
  const struct {
    const char* id;
    KernelStatus status;
    const char* replica;
    const char* cmp01;
  } kernels[] = {
      {"ok-clean", KernelStatus::kOk, "accepted", "pass"},
      {"timeout-passes", KernelStatus::kTimeout, "rejected", "pass"},
      {"crash-passes", KernelStatus::kCrash, "rejected", "pass"},
      {"timeout-fails", KernelStatus::kTimeout, "accepted", "fail"},
      {"bad-output", KernelStatus::kBadOutput, "accepted", "fail"},
  };
  for (const auto& k : kernels) {
    ASSERT_TRUE(store.enqueue({testing::toy_kernel(k.id)}).ok());
    KernelOutcome o{k.id, k.status, "", std::string(k.replica), {}};
    VerdictRecord cmp01{"CMP-01", "strict", k.cmp01};
    cmp01.finding = cmp01.verdict == "fail" ? Finding::kCallFailed : Finding::kNone;
    o.verdicts.push_back(cmp01);
    o.verdicts.push_back({"EXC-01", "strict", "pass"});
    ASSERT_TRUE(store.record(o, run).ok());
  }
  const Headline h = headline(store).value();
  ASSERT_EQ(h.profiles.size(), 1u);
  expect_rate(h.profiles[0].judged.any_violation, 0, 1);  // ok-clean alone
  expect_rate(h.profiles[0].judged.tf_floor, 0, 1);
  ASSERT_EQ(h.classes.size(), 1u);
  expect_rate(h.classes[0].judged.any_violation, 0, 1);
  for (const GateRate& g : h.gates) expect_rate(g.fail, 0, 1);
  for (const FindingCount& f : h.findings) EXPECT_EQ(f.judged.hits, 0);
  const std::vector<Differential> d = differential(store, "strict", "replica").value();
  expect_2x2(d[0], 1, 0, 0, 0, 4);
  int64_t statuses = 0;
  for (const StatusCount& s : h.statuses) statuses += s.kernels;
  EXPECT_EQ(statuses, 5);
}

// A store recorded before findings were typed: the migration leaves finding '' on every verdict.
// Any violation is still known; the floor and every robustness row that reads a finding or a
// scope is unavailable, never recomputed from which gate failed.
TEST(QueriesUntyped, AStoreWithoutFindingsHasNoFloor) {
  ScratchDir dir;
  const std::string path = dir.file("old.db");
  {
    Store store = Store::open(path).value();
    record_specs(store, {{"tf-gate",
                          "A",
                          "elementwise",
                          true,
                          "accepted",
                          "accepted",
                          KernelStatus::kOk,
                          {{"CMP-02", "fail"}, {"CMP-01", "pass"}}},
                         {"clean",
                          "A",
                          "elementwise",
                          true,
                          "accepted",
                          "accepted",
                          KernelStatus::kOk,
                          {{"CMP-01", "pass"}}}});
  }
  Store store = Store::open(path).value();
  ASSERT_TRUE(store.impl().db.exec("UPDATE verdicts SET finding='', scope=''").ok());
  const Headline h = headline(store).value();
  ASSERT_EQ(h.profiles.size(), 1u);
  const ProfileHeadline& p = h.profiles[0];
  expect_rate(p.judged.any_violation, 1, 2);
  EXPECT_FALSE(p.judged.tf_floor.has_value());  // CMP-02 is a TF gate: still no floor
  EXPECT_FALSE(p.replica_accepted.tf_floor.has_value());
  EXPECT_EQ(p.untyped_kernels, 1);
  ASSERT_EQ(h.robustness.size(), 4u);
  expect_rate(h.robustness[0].any_violation, 1, 2);
  for (const RobustnessRow& r : h.robustness) EXPECT_FALSE(r.tf_floor.has_value());
  for (size_t i = 1; i < 4; ++i) EXPECT_FALSE(h.robustness[i].any_violation.has_value());
  ASSERT_FALSE(h.findings.empty());
  EXPECT_FALSE(h.findings.back().finding.has_value());  // the untyped row, last
  expect_rate(h.findings.back().judged, 1, 2);
  EXPECT_FALSE(h.classes[0].judged.tf_floor.has_value());
}

// Membership is decided kernel by kernel: a typed TF fail puts a kernel in the floor whatever
// else it has; only a kernel whose membership hangs on an untyped fail makes a rate unavailable,
// and only in the populations that hold it. A fail that names no finding but was found at
// another size is out once shape generality is left out, so those rows are known again.
TEST(QueriesUntyped, OnlyUndecidableKernelsMakeARateUnavailable) {
  ScratchDir dir;
  Store store = Store::open(dir.file("mixed.db")).value();
  // clang-format off
  record_specs(store, {
      // In the floor: class_mismatch decides, the untyped CMP-01 fail does not matter.
      {"typed-and-untyped", "A", "elementwise", true, "accepted", "accepted", KernelStatus::kOk,
       {{"EXC-01", "fail", F::kClassMismatch}, {"CMP-01", "fail", F::kNone}}},
      // Undecidable, but replica-rejected: only the judged population loses its floor.
      {"untyped-rejected", "A", "elementwise", true, "rejected", "rejected", KernelStatus::kOk,
       {{"CMP-02", "fail", F::kNone}}},
      // Replica-accepted, untyped, at another size: unknown until shape generality is left out.
      {"untyped-shape", "A", "elementwise", true, "rejected", "accepted", KernelStatus::kOk,
       {{"CMP-01", "fail", F::kNone, S::kShape}}},
      {"clean", "A", "elementwise", true, "accepted", "accepted", KernelStatus::kOk,
       {{"CMP-01", "pass"}}},
  });
  // clang-format on
  const Headline h = headline(store).value();
  const ProfileHeadline& p = h.profiles.at(0);
  expect_rate(p.judged.any_violation, 3, 4);
  EXPECT_FALSE(p.judged.tf_floor.has_value());
  EXPECT_FALSE(p.replica_accepted.tf_floor.has_value());  // untyped-shape is in it
  expect_rate(p.original_accepted.tf_floor, 1, 2);        // typed-and-untyped, clean
  EXPECT_EQ(p.untyped_kernels, 2);
  // Replica-accepted: typed-and-untyped, untyped-shape, clean.
  ASSERT_EQ(h.robustness.size(), 4u);
  expect_rate(h.robustness[0].any_violation, 2, 3);
  EXPECT_FALSE(h.robustness[0].tf_floor.has_value());
  EXPECT_FALSE(h.robustness[1].any_violation.has_value());  // is untyped-shape nondeterminism?
  expect_rate(h.robustness[2].any_violation, 1, 3);         // its shape fail is out, known
  expect_rate(h.robustness[2].tf_floor, 1, 3);
  expect_rate(h.robustness[3].tf_floor, 1, 3);
}

}  // namespace
}  // namespace kcv::audit
