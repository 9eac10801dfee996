// File: tests/unit/audit/diff_test.cpp
// The verdict diff of two stores (`kcv diff`): two stores of the same outcomes are identical
// whatever their reasons and worst ratios say; a changed verdict, finding, status or replica
// verdict is one difference each, named by kernel, gate and profile; a verdict one store lacks
// is a difference; kernels final in one store only are listed and not compared.
#include <gtest/gtest.h>

#include "audit_fixtures.hpp"

namespace kcv::audit {
namespace {

using testing::kid;
using testing::ScratchDir;
using testing::toy_kernel;
using testing::toy_outcome;

// A store holding kernels 0..n-1 recorded as `outcome(i)` says (kernel n stays pending).
template <typename Outcome>
void make_store(const std::string& path, int n, Outcome outcome) {
  Store store = Store::open(path).value();
  const int64_t run = store.begin_run({"0.1.0", "gen", 7, {"strict"}, "kcv audit", "0/1"}).value();
  for (int i = 0; i <= n; ++i) ASSERT_TRUE(store.enqueue({toy_kernel(kid(i))}).ok());
  for (int i = 0; i < n; ++i) ASSERT_TRUE(store.record(outcome(i), run).ok());
  ASSERT_TRUE(store.finish_run(run).ok());
}

StoreDiff diff_of(const std::string& a, const std::string& b) {
  StoreOptions read_only;
  read_only.read_only = true;
  const Store sa = Store::open(a, read_only).value();
  const Store sb = Store::open(b, read_only).value();
  Expected<StoreDiff> d = diff_verdicts(sa, sb);
  EXPECT_TRUE(d.has_value()) << d.error().to_string();
  return d.value();
}

TEST(Diff, SameOutcomesAreIdenticalWhateverTheirReasonsAndRatios) {
  ScratchDir dir;
  make_store(dir.file("a.db"), 4, [](int i) { return toy_outcome(kid(i), i == 2); });
  make_store(dir.file("b.db"), 4, [](int i) {
    KernelOutcome o = toy_outcome(kid(i), i == 2);
    for (VerdictRecord& v : o.verdicts) {
      v.reason = "worker pid 4242 answered";  // pids and measured values differ between runs
      v.worst_ratio = v.verdict == "fail" ? 5.0 : 0.5;
    }
    return o;
  });
  const StoreDiff d = diff_of(dir.file("a.db"), dir.file("b.db"));
  EXPECT_TRUE(d.identical());
  EXPECT_EQ(d.final_in_both, 4);
  EXPECT_EQ(d.verdicts_compared, 4 * static_cast<int64_t>(testing::toy_gates().size()));
  EXPECT_TRUE(d.final_in_a_only.empty());
  EXPECT_TRUE(d.final_in_b_only.empty());
}

TEST(Diff, EachChangedFieldIsOneRowNamingItsKey) {
  ScratchDir dir;
  make_store(dir.file("a.db"), 4, [](int i) { return toy_outcome(kid(i), i == 2); });
  make_store(dir.file("b.db"), 4, [](int i) {
    KernelOutcome o = toy_outcome(kid(i), i == 2);
    if (i == 0) {  // a pass turned fail
      o.verdicts[1].verdict = "fail";
      o.verdicts[1].finding = Finding::kClassMismatch;
      o.verdicts[1].scope = ProbeScope::kValues;
      o.verdicts[1].reason = "NaN where the oracle is finite";
    }
    if (i == 2) o.verdicts[0].finding = Finding::kPrecisionLost;  // same verdict, other finding
    if (i == 3) {
      o.status = KernelStatus::kTimeout;
      o.replica_verdict = "rejected";
      o.verdicts.pop_back();  // ORD-02 not reached
    }
    return o;
  });
  const StoreDiff d = diff_of(dir.file("a.db"), dir.file("b.db"));
  ASSERT_EQ(d.differences.size(), 5u);
  const VerdictDifference& changed = d.differences[0];
  EXPECT_EQ(changed.kernel_id, kid(0));
  EXPECT_EQ(changed.what, "verdict");
  EXPECT_EQ(changed.gate, testing::toy_gates()[1]);
  EXPECT_EQ(changed.profile, "strict");
  EXPECT_EQ(changed.a, "pass");
  EXPECT_EQ(changed.b, "fail class_mismatch values");
  EXPECT_EQ(changed.reason_b, "NaN where the oracle is finite");
  EXPECT_EQ(d.differences[1].kernel_id, kid(2));
  EXPECT_EQ(d.differences[1].a, "fail value_over_bound reference");
  EXPECT_EQ(d.differences[1].b, "fail precision_lost reference");
  EXPECT_EQ(d.differences[2].what, "status");
  EXPECT_EQ(d.differences[2].a, "ok");
  EXPECT_EQ(d.differences[2].b, "timeout");
  EXPECT_EQ(d.differences[3].what, "replica");
  EXPECT_EQ(d.differences[3].b, "rejected");
  EXPECT_EQ(d.differences[4].gate, "ORD-02");
  EXPECT_EQ(d.differences[4].b, "-");
  EXPECT_EQ(changed.kind, DifferenceKind::kPassFail);
  EXPECT_EQ(d.differences[1].kind, DifferenceKind::kFailChanged);
  EXPECT_EQ(d.differences[2].kind, DifferenceKind::kStatus);
  EXPECT_EQ(d.differences[3].kind, DifferenceKind::kReplica);
  EXPECT_EQ(d.differences[4].kind, DifferenceKind::kOneSideOnly);
}

TEST(Diff, AProbeNotRunOrRefusedInOneStoreIsNoFlip) {
  ScratchDir dir;
  make_store(dir.file("a.db"), 2, [](int i) { return toy_outcome(kid(i), false); });
  make_store(dir.file("b.db"), 2, [](int i) {
    KernelOutcome o = toy_outcome(kid(i), false);
    o.verdicts[0].verdict = i == 0 ? "error" : "not_applicable";
    o.verdicts[0].reason = i == 0 ? "not run: the time limit was reached" : "refused";
    return o;
  });
  const StoreDiff d = diff_of(dir.file("a.db"), dir.file("b.db"));
  ASSERT_EQ(d.differences.size(), 2u);
  EXPECT_EQ(d.differences[0].kind, DifferenceKind::kError);
  EXPECT_EQ(d.differences[1].kind, DifferenceKind::kNotApplicable);
  EXPECT_EQ(difference_kind_name(DifferenceKind::kError), "an error in one store");
}

TEST(Diff, KernelsFinalInOneStoreOnlyAreListedNotCompared) {
  ScratchDir dir;
  make_store(dir.file("a.db"), 5, [](int i) { return toy_outcome(kid(i)); });
  make_store(dir.file("b.db"), 3, [](int i) { return toy_outcome(kid(i), i == 1); });
  const StoreDiff d = diff_of(dir.file("a.db"), dir.file("b.db"));
  EXPECT_EQ(d.final_in_both, 3);
  EXPECT_EQ(d.final_in_a_only, (std::vector<std::string>{kid(3), kid(4)}));
  EXPECT_TRUE(d.final_in_b_only.empty());
  ASSERT_EQ(d.differences.size(), 1u);
  EXPECT_EQ(d.differences[0].kernel_id, kid(1));
  EXPECT_EQ(d.differences[0].gate, "CMP-01");
}

}  // namespace
}  // namespace kcv::audit
