// File: tests/unit/audit/merge_test.cpp
// Merging shard stores: disjoint shards union exactly (kernels, verdicts, failing probes, runs
// renumbered with provenance); the same verdict twice is fine; a different verdict, or a
// different final status, for the same key is an error naming the key and leaves the
// destination untouched; a finished kernel replaces an unfinished one.
#include <gtest/gtest.h>

#include "audit/store_impl.hpp"
#include "audit_fixtures.hpp"

namespace kcv::audit {
namespace {

using testing::kid;
using testing::ScratchDir;
using testing::toy_kernel;
using testing::toy_outcome;

// A shard store holding kernels [first, last), all recorded; kernel 3 fails CMP-01.
void make_shard(const std::string& path, int first, int last, std::string_view shard) {
  Store store = Store::open(path).value();
  const int64_t run =
      store.begin_run({"0.1.0", "gen", 7, {"strict"}, "kcv audit", std::string(shard)}).value();
  for (int i = first; i < last; ++i) {
    ASSERT_TRUE(store.enqueue({toy_kernel(kid(i))}).ok());
    ASSERT_TRUE(store.record(toy_outcome(kid(i), i == 3), run).ok());
  }
  ASSERT_TRUE(store.finish_run(run).ok());
}

int64_t count(const std::string& path, const char* sql) {
  Store store = Store::open(path).value();
  return store.impl().db.scalar(sql).value();
}

TEST(Merge, UnionsDisjointShards) {
  ScratchDir dir;
  make_shard(dir.file("s0.db"), 0, 4, "0/2");
  make_shard(dir.file("s1.db"), 4, 6, "1/2");
  Expected<MergeSummary> m = merge(dir.file("all.db"), {dir.file("s0.db"), dir.file("s1.db")});
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  EXPECT_EQ(m->runs, 2);
  EXPECT_EQ(m->kernels_added, 6);
  EXPECT_EQ(m->verdicts_added, 6 * static_cast<int64_t>(testing::toy_gates().size()));
  const std::string all = dir.file("all.db");
  EXPECT_EQ(count(all, "SELECT count(*) FROM kernels WHERE status='ok'"), 6);
  EXPECT_EQ(count(all, "SELECT count(*) FROM failing_probes"), 1);
  EXPECT_EQ(count(all, "SELECT count(DISTINCT run_id) FROM verdicts"), 2);
  EXPECT_EQ(count(all, "SELECT count(*) FROM runs WHERE origin LIKE '%s1.db run 1'"), 1);
  EXPECT_EQ(count(all, "SELECT count(*) FROM merges"), 2);
  EXPECT_EQ(count(all,
                  "SELECT count(*) FROM verdicts v JOIN runs r USING(run_id) "
                  "WHERE v.kernel_id='toy/run/L1/P005' AND r.shard='1/2'"),
            static_cast<int64_t>(testing::toy_gates().size()));
  Store store = Store::open(all).value();
  EXPECT_EQ(store.integrity_check().value(), "ok");
}

TEST(Merge, IdenticalOverlapIsFine) {
  ScratchDir dir;
  make_shard(dir.file("a.db"), 0, 3, "0/1");
  make_shard(dir.file("b.db"), 2, 5, "0/1");
  Expected<MergeSummary> m = merge(dir.file("all.db"), {dir.file("a.db"), dir.file("b.db")});
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  EXPECT_EQ(m->kernels_added, 5);
  EXPECT_EQ(m->verdicts_identical, static_cast<int64_t>(testing::toy_gates().size()));
}

TEST(Merge, CopiesFindingsScopesAndFacts) {
  ScratchDir dir;
  {
    Store a = Store::open(dir.file("a.db")).value();
    const int64_t run = a.begin_run({}).value();
    ASSERT_TRUE(a.enqueue({toy_kernel(kid(1))}).ok());
    KernelOutcome o = toy_outcome(kid(1), /*fail=*/true);
    o.verdicts[0].scope = ProbeScope::kShape;
    o.facts_json = R"({"ops":["relu"]})";
    ASSERT_TRUE(a.record(o, run).ok());
  }
  ASSERT_TRUE(merge(dir.file("all.db"), {dir.file("a.db")}).has_value());
  const std::string all = dir.file("all.db");
  EXPECT_EQ(count(all,
                  "SELECT count(*) FROM verdicts WHERE gate='CMP-01' AND "
                  "finding='value_over_bound' AND scope='shape'"),
            1);
  EXPECT_EQ(count(all, "SELECT count(*) FROM kernels WHERE facts='{\"ops\":[\"relu\"]}'"), 1);
}

// The same verdict with another finding (an older kcv recorded none) keeps the destination's.
// b.db stands for a store of such a kcv: no findings on its fails, and no key or MACs.
TEST(Merge, ADifferingFindingIsDifferingEvidence) {
  ScratchDir dir;
  make_shard(dir.file("a.db"), 3, 4, "0/1");
  make_shard(dir.file("b.db"), 3, 4, "0/1");
  {
    Store b = Store::open(dir.file("b.db")).value();
    ASSERT_TRUE(b.impl()
                    .db
                    .exec("UPDATE verdicts SET finding='' WHERE verdict='fail'; "
                          "DELETE FROM store_meta; UPDATE kernels SET mac=''; "
                          "UPDATE verdicts SET mac=''")
                    .ok());
  }
  Expected<MergeSummary> m = merge(dir.file("all.db"), {dir.file("a.db"), dir.file("b.db")});
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  EXPECT_EQ(m->evidence_differs, 1);
  EXPECT_EQ(m->verdicts_identical, static_cast<int64_t>(testing::toy_gates().size()) - 1);
  EXPECT_EQ(count(dir.file("all.db"), "SELECT count(*) FROM verdicts WHERE finding=''"), 0);
}

TEST(Merge, DifferingVerdictIsAnErrorNamingTheKey) {
  ScratchDir dir;
  make_shard(dir.file("a.db"), 0, 4, "0/1");
  {
    Store b = Store::open(dir.file("b.db")).value();
    const int64_t run = b.begin_run({}).value();
    ASSERT_TRUE(b.enqueue({toy_kernel(kid(3))}).ok());
    ASSERT_TRUE(b.record(toy_outcome(kid(3), /*fail=*/false), run).ok());  // a says fail
  }
  Expected<MergeSummary> m = merge(dir.file("all.db"), {dir.file("a.db"), dir.file("b.db")});
  ASSERT_FALSE(m.has_value());
  EXPECT_NE(m.error().message.find("verdict (toy/run/L1/P003, CMP-01, strict): 'fail' in the "
                                   "destination, 'pass' here"),
            std::string::npos)
      << m.error().to_string();
  EXPECT_EQ(count(dir.file("all.db"), "SELECT count(*) FROM kernels"), 0);  // all or nothing
}

TEST(Merge, DifferingFinalStatusIsAnError) {
  ScratchDir dir;
  make_shard(dir.file("a.db"), 0, 1, "0/1");
  {
    Store b = Store::open(dir.file("b.db")).value();
    const int64_t run = b.begin_run({}).value();
    ASSERT_TRUE(b.enqueue({toy_kernel(kid(0))}).ok());
    ASSERT_TRUE(b.record({kid(0), KernelStatus::kTimeout, "", std::nullopt, {}}, run).ok());
  }
  Expected<MergeSummary> m = merge(dir.file("all.db"), {dir.file("a.db"), dir.file("b.db")});
  ASSERT_FALSE(m.has_value());
  EXPECT_NE(m.error().message.find("kernel toy/run/L1/P000: status 'ok'"), std::string::npos)
      << m.error().to_string();
}

TEST(Merge, FinishedKernelReplacesUnfinished) {
  ScratchDir dir;
  {
    Store a = Store::open(dir.file("a.db")).value();
    ASSERT_TRUE(a.enqueue({toy_kernel(kid(0))}).ok());  // pending in a
  }
  make_shard(dir.file("b.db"), 0, 1, "0/1");
  Expected<MergeSummary> m = merge(dir.file("all.db"), {dir.file("a.db"), dir.file("b.db")});
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  Store all = Store::open(dir.file("all.db")).value();
  EXPECT_EQ(all.kernel(kid(0)).value()->status, KernelStatus::kOk);
  EXPECT_EQ(all.verdicts(kid(0)).value().size(), testing::toy_gates().size());
}

TEST(Merge, MissingSourceIsAnError) {
  ScratchDir dir;
  Expected<MergeSummary> m = merge(dir.file("all.db"), {dir.file("absent.db")});
  ASSERT_FALSE(m.has_value());
  EXPECT_NE(m.error().to_string().find("absent.db"), std::string::npos);
}

}  // namespace
}  // namespace kcv::audit
