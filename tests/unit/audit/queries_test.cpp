// File: tests/unit/audit/queries_test.cpp
// The report queries on a seven-kernel synthetic store whose every number is computed by hand
// in the comments below: the any-violation rate, the tolerance-free floor (ORD-02 only with
// declared determinism), per-gate rates among kernels where the gate applies, per op class,
// the 2x2 differentials against the replica and the original verdict, and the seeded sample.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "audit_fixtures.hpp"

namespace kcv::audit {
namespace {

using testing::ScratchDir;

struct Spec {
  std::string id, corpus, op_class;
  bool deterministic;
  std::optional<std::string> original, replica;
  KernelStatus status;
  std::vector<std::pair<std::string, std::string>> strict;  // gate -> verdict
};

// any = a strict verdict fails; tf = a TF gate fails (ORD-02 only when deterministic).
const std::vector<Spec> kSpecs = {
    // k1: CMP-01 (not TF) fails -> any, not tf. Replica/original accept -> the gap.
    {"k1",
     "A",
     "elementwise",
     true,
     "accepted",
     "accepted",
     KernelStatus::kOk,
     {{"CMP-01", "fail"}, {"CMP-02", "pass"}, {"ORD-02", "pass"}, {"EXC-01", "pass"}}},
    // k2: CMP-02 (TF) fails -> any, tf. Gap.
    {"k2",
     "A",
     "reduction",
     true,
     "accepted",
     "accepted",
     KernelStatus::kOk,
     {{"CMP-01", "pass"}, {"CMP-02", "fail"}}},
    // k3: ORD-02 fails without declared determinism -> any, not tf. Both reject.
    {"k3",
     "A",
     "reduction",
     false,
     "rejected",
     "rejected",
     KernelStatus::kOk,
     {{"CMP-01", "pass"}, {"ORD-02", "fail"}}},
    // k4: clean; original verdict unknown. Both accept (replica), excluded (original).
    {"k4",
     "B",
     "elementwise",
     true,
     std::nullopt,
     "accepted",
     KernelStatus::kOk,
     {{"CMP-01", "pass"}, {"EXC-01", "pass"}, {"ORD-02", "not_applicable"}}},
    // k5: clean but rejected by both others -> the reverse case.
    {"k5",
     "B",
     "elementwise",
     true,
     "rejected",
     "rejected",
     KernelStatus::kOk,
     {{"CMP-01", "pass"}}},
    // k6: crashed, no verdicts -> not evaluated, excluded.
    {"k6", "B", "matmul", true, std::nullopt, std::nullopt, KernelStatus::kCrash, {}},
    // k7: EXC-01 (TF) fails, CMP-01 errors; original compile_error counts as a rejection.
    {"k7",
     "B",
     "matmul",
     true,
     "compile_error",
     "rejected",
     KernelStatus::kOk,
     {{"EXC-01", "fail"}, {"CMP-01", "error"}}},
};

class Queries : public ::testing::Test {
 protected:
  void SetUp() override {
    Store store = Store::open(dir_.file("q.db")).value();
    const int64_t run = store.begin_run({}).value();
    for (const Spec& s : kSpecs) {
      KernelInfo info = testing::toy_kernel(s.id, s.corpus, s.op_class);
      info.determinism_declared = s.deterministic;
      info.original_verdict = s.original;
      ASSERT_TRUE(store.enqueue({info}).ok());
      KernelOutcome o{s.id, s.status, "", s.replica, {}};
      for (const auto& [gate, verdict] : s.strict) o.verdicts.push_back({gate, "strict", verdict});
      if (s.id == "k1") o.verdicts.push_back({"CMP-01", "fast-math", "pass"});
      ASSERT_TRUE(store.record(o, run).ok());
    }
    store_.emplace(std::move(store));
  }
  ScratchDir dir_;
  std::optional<Store> store_;
};

TEST_F(Queries, ToleranceFreeGatesAreTheSixOfTheIssue) {
  EXPECT_EQ(tolerance_free_gates(),
            (std::vector<std::string>{"CMP-02", "ORD-02", "EXC-01", "EXC-02", "RES-01", "RES-02"}));
}

// A partial audit: the kernels a run has not finished show per corpus, apart from the final ones.
TEST_F(Queries, HeadlineCountsStatusesPerCorpus) {
  ASSERT_TRUE(store_->enqueue({testing::toy_kernel("k9", "C", "elementwise")}).ok());
  const Headline h = headline(*store_).value();
  std::map<std::pair<std::string, std::string>, int64_t> want;
  for (const Spec& s : kSpecs) ++want[{s.corpus, std::string(status_name(s.status))}];
  want[{"C", "pending"}] = 1;
  std::map<std::pair<std::string, std::string>, int64_t> got;
  for (const CorpusStatusCount& c : h.corpus_statuses) got[{c.corpus, c.status}] = c.kernels;
  EXPECT_EQ(got, want);
  ASSERT_FALSE(h.corpus_statuses.empty());
  EXPECT_EQ(h.corpus_statuses.back().corpus, "C");  // ordered by corpus
}

TEST_F(Queries, HeadlineCountsKernelsByProfile) {
  const Headline h = headline(*store_).value();
  ASSERT_EQ(h.statuses.size(), 2u);
  EXPECT_EQ(h.statuses[0].status, "crash");
  EXPECT_EQ(h.statuses[0].kernels, 1);
  EXPECT_EQ(h.statuses[1].kernels, 6);
  ASSERT_EQ(h.profiles.size(), 2u);  // fast-math, strict (sorted)
  EXPECT_EQ(h.profiles[0].profile, "fast-math");
  EXPECT_EQ(h.profiles[0].any_violation.hits, 0);
  EXPECT_EQ(h.profiles[0].any_violation.total, 1);
  const ProfileHeadline& strict = h.profiles[1];
  EXPECT_EQ(strict.any_violation.hits, 4);   // k1 k2 k3 k7
  EXPECT_EQ(strict.any_violation.total, 6);  // all but k6
  EXPECT_EQ(strict.tf_floor.hits, 2);        // k2 k7 (k3's ORD-02 is not declared)
  EXPECT_EQ(strict.tf_floor.total, 6);
}

TEST_F(Queries, GateRatesCountOnlyKernelsWhereTheGateApplies) {
  std::map<std::string, GateRate> strict;
  const Headline h = headline(*store_).value();
  for (const GateRate& g : h.gates) {
    if (g.profile == "strict") strict[g.gate] = g;
  }
  EXPECT_EQ(strict["CMP-01"].fail.hits, 1);   // k1
  EXPECT_EQ(strict["CMP-01"].fail.total, 5);  // k1..k5; k7 errored
  EXPECT_EQ(strict["CMP-01"].errors, 1);
  EXPECT_EQ(strict["CMP-02"].fail.hits, 1);
  EXPECT_EQ(strict["CMP-02"].fail.total, 2);
  EXPECT_EQ(strict["EXC-01"].fail.hits, 1);
  EXPECT_EQ(strict["EXC-01"].fail.total, 3);
  EXPECT_EQ(strict["ORD-02"].fail.hits, 1);
  EXPECT_EQ(strict["ORD-02"].fail.total, 2);
  EXPECT_EQ(strict["ORD-02"].not_applicable, 1);
}

TEST_F(Queries, PerOpClass) {
  std::map<std::string, ClassRate> strict;
  const Headline h = headline(*store_).value();
  for (const ClassRate& c : h.classes) {
    if (c.profile == "strict") strict[c.op_class] = c;
  }
  EXPECT_EQ(strict["elementwise"].any_violation.hits, 1);  // k1 of k1 k4 k5
  EXPECT_EQ(strict["elementwise"].any_violation.total, 3);
  EXPECT_EQ(strict["elementwise"].tf_floor.hits, 0);
  EXPECT_EQ(strict["reduction"].any_violation.hits, 2);
  EXPECT_EQ(strict["reduction"].tf_floor.hits, 1);     // k2
  EXPECT_EQ(strict["matmul"].any_violation.total, 1);  // k7; k6 not evaluated
  EXPECT_EQ(strict["matmul"].tf_floor.hits, 1);
}

// A battery run at a reduced shape marks every verdict (evidence battery_shape); the headline
// counts kernels, not verdicts, and none in a store without such verdicts.
TEST_F(Queries, ReducedShapeCountsKernelsWhoseVerdictsNameOne) {
  EXPECT_EQ(headline(*store_).value().reduced_shape, 0);
  ASSERT_TRUE(store_->enqueue({testing::toy_kernel("k8", "B", "elementwise")}).ok());
  const int64_t run = store_->begin_run({}).value();
  KernelOutcome o{"k8", KernelStatus::kOk, "", "accepted", {}};
  for (const char* gate : {"CMP-01", "EXC-01"}) {
    VerdictRecord v{gate, "strict", "pass"};
    v.evidence_json = R"({"battery_shape":{"reduced":"batch_size=2"}})";
    o.verdicts.push_back(v);
  }
  ASSERT_TRUE(store_->record(o, run).ok());
  EXPECT_EQ(headline(*store_).value().reduced_shape, 1);
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
  ASSERT_EQ(replica.size(), 3u);  // all, A, B
  expect_2x2(replica[0], 1, 2, 1, 2, 1);
  expect_2x2(replica[1], 0, 2, 0, 1, 0);  // A: k1 k2 gap, k3 both reject
  expect_2x2(replica[2], 1, 0, 1, 1, 1);  // B: k4, k5 reverse, k7, k6 excluded
  const std::vector<Differential> original = differential(*store_, "strict", "original").value();
  expect_2x2(original[0], 0, 2, 1, 2, 2);  // k4 has no original verdict
  EXPECT_FALSE(differential(*store_, "strict", "nobody").has_value());
}

TEST_F(Queries, SampleIsStratifiedAndSeeded) {
  const std::vector<SampleItem> a = hand_audit_sample(*store_, "strict", 2, 99).value();
  std::map<std::string, int> per;
  for (const SampleItem& s : a) ++per[s.stratum];
  EXPECT_EQ(per, (std::map<std::string, int>{
                     {"A/violation", 2}, {"B/clean", 2}, {"B/crash", 1}, {"B/violation", 1}}));
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

// A battery that stopped part-way (timeout, crash) with passes only checked the kernel in part:
// it accepts nothing, so the kernel is in no rate's denominator and in no 2x2 cell (a replica
// rejection of it is no reverse case). A gate that failed before the stop still rejects.
TEST(QueriesUnfinishedBattery, PassesOfAStoppedBatteryAcceptNothing) {
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
  };
  for (const auto& k : kernels) {
    ASSERT_TRUE(store.enqueue({testing::toy_kernel(k.id)}).ok());
    KernelOutcome o{k.id, k.status, "", std::string(k.replica), {}};
    o.verdicts.push_back({"CMP-01", "strict", k.cmp01});
    o.verdicts.push_back({"EXC-01", "strict", "pass"});
    ASSERT_TRUE(store.record(o, run).ok());
  }
  const Headline h = headline(store).value();
  ASSERT_EQ(h.profiles.size(), 1u);
  EXPECT_EQ(h.profiles[0].any_violation.hits, 1);   // timeout-fails
  EXPECT_EQ(h.profiles[0].any_violation.total, 2);  // ok-clean, timeout-fails
  ASSERT_EQ(h.classes.size(), 1u);  // every toy kernel is elementwise
  EXPECT_EQ(h.classes[0].any_violation.total, 2);
  // per-gate rates keep every judged verdict: EXC-01 passed on all four
  const auto exc01 = std::find_if(h.gates.begin(), h.gates.end(),
                                  [](const GateRate& g) { return g.gate == "EXC-01"; });
  ASSERT_NE(exc01, h.gates.end());
  EXPECT_EQ(exc01->fail.total, 4);
  const std::vector<Differential> d = differential(store, "strict", "replica").value();
  expect_2x2(d[0], 1, 1, 0, 0, 2);  // both accept ok-clean, gap timeout-fails, 2 excluded
}

}  // namespace
}  // namespace kcv::audit
