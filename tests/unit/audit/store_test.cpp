// File: tests/unit/audit/store_test.cpp
// The store's contract without faults: a recorded kernel reads back exactly (findings, scopes and
// the facts the run learned included); resume redoes pending and running kernels and skips final
// ones; a redone kernel replaces its verdicts; a store of a newer schema, or a database that is
// not a store, is refused. Migration from older schemas: schema_test.cpp.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <map>

#include "audit/store_impl.hpp"
#include "audit_fixtures.hpp"

namespace kcv::audit {
namespace {

using testing::kid;
using testing::ScratchDir;
using testing::toy_kernel;
using testing::toy_outcome;

Store open_store(const std::string& path) {
  Expected<Store> s = Store::open(path);
  if (!s) ADD_FAILURE() << s.error().to_string();
  return std::move(s).value();
}

void exec_raw(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

TEST(Store, RoundTripsKernelsAndVerdicts) {
  ScratchDir dir;
  Store store = open_store(dir.file("a.db"));
  Expected<int64_t> run = store.begin_run({"0.1.0", "gen-1", 42, {"strict"}, "kcv audit x", "0/1"});
  ASSERT_TRUE(run.has_value());
  ASSERT_TRUE(store.enqueue({toy_kernel(kid(1))}).ok());
  KernelOutcome outcome = toy_outcome(kid(1), /*fail=*/true);
  outcome.verdicts[1].worst_ratio.reset();
  outcome.verdicts[1].bits_lost = 2.5;
  Status s = store.record(outcome, *run);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  ASSERT_TRUE(store.finish_run(*run).ok());

  Expected<std::optional<KernelRow>> k = store.kernel(kid(1));
  ASSERT_TRUE(k.has_value() && k->has_value());
  EXPECT_EQ((*k)->status, KernelStatus::kOk);
  EXPECT_EQ((*k)->replica_verdict, "accepted");
  EXPECT_EQ((*k)->run_id, *run);
  EXPECT_EQ((*k)->info.op_class, "elementwise");
  Expected<std::vector<VerdictRecord>> v = store.verdicts(kid(1));
  ASSERT_TRUE(v.has_value());
  ASSERT_EQ(v->size(), outcome.verdicts.size());
  for (const VerdictRecord& want : outcome.verdicts) {
    auto got = std::find_if(v->begin(), v->end(),
                            [&](const VerdictRecord& r) { return r.gate == want.gate; });
    ASSERT_NE(got, v->end()) << want.gate;
    EXPECT_EQ(got->verdict, want.verdict);
    EXPECT_EQ(got->worst_ratio, want.worst_ratio);
    EXPECT_EQ(got->bits_lost, want.bits_lost);
    EXPECT_EQ(got->evidence_json, want.evidence_json);
    EXPECT_EQ(got->probe_token, want.probe_token);
  }
  Expected<std::vector<FailingProbe>> probes = store.failing_probes(kid(1));
  ASSERT_TRUE(probes.has_value());
  ASSERT_EQ(probes->size(), 1u);
  EXPECT_EQ(probes->front().gate, "CMP-01");
  EXPECT_EQ(store.integrity_check().value(), "ok");
}

int64_t count(Store& store, const char* sql) { return store.impl().db.scalar(sql).value(); }

TEST(Store, RoundTripsFindingsScopesAndFacts) {
  ScratchDir dir;
  Store store = open_store(dir.file("a.db"));
  const int64_t run = store.begin_run({}).value();
  ASSERT_TRUE(store.enqueue({toy_kernel(kid(1)), toy_kernel(kid(2))}).ok());
  KernelOutcome o = toy_outcome(kid(1), /*fail=*/true);
  o.verdicts[0].scope = ProbeScope::kLayout;  // CMP-01, failing
  o.verdicts[1].scope = ProbeScope::kShape;   // CMP-02, passing: no scope stored
  o.verdicts[2].verdict = "fail";             // EXC-01
  o.verdicts[2].finding = Finding::kClassMismatch;
  o.verdicts[2].scope = ProbeScope::kValues;
  o.op_class = "reduction";
  o.determinism_declared = false;
  o.facts_json = R"({"ops":["sum"],"deterministic":false})";
  ASSERT_TRUE(store.record(o, run).ok());
  std::map<std::string, VerdictRecord> got;
  const std::vector<VerdictRecord> verdicts = store.verdicts(kid(1)).value();
  for (const VerdictRecord& v : verdicts) got[v.gate] = v;
  EXPECT_EQ(got["CMP-01"].finding, Finding::kValueOverBound);
  EXPECT_EQ(got["CMP-01"].scope, ProbeScope::kLayout);
  EXPECT_EQ(got["EXC-01"].finding, Finding::kClassMismatch);
  EXPECT_EQ(got["EXC-01"].scope, ProbeScope::kValues);
  EXPECT_EQ(got["CMP-02"].finding, Finding::kNone);
  EXPECT_EQ(count(store, "SELECT count(*) FROM verdicts WHERE scope=''"), 2);  // the passes
  EXPECT_EQ(count(store, "SELECT count(*) FROM verdicts WHERE finding='none'"), 2);
  const KernelRow k = store.kernel(kid(1)).value().value();
  EXPECT_EQ(k.info.op_class, "reduction");
  EXPECT_FALSE(k.info.determinism_declared);
  EXPECT_EQ(k.facts_json, o.facts_json);
  // An outcome that learned nothing leaves the enqueued facts as they are.
  ASSERT_TRUE(store.record(toy_outcome(kid(2)), run).ok());
  const KernelRow k2 = store.kernel(kid(2)).value().value();
  EXPECT_EQ(k2.info.op_class, "elementwise");
  EXPECT_TRUE(k2.info.determinism_declared);
  EXPECT_EQ(k2.facts_json, "{}");
}

TEST(Store, FactsMustBeJson) {
  ScratchDir dir;
  Store store = open_store(dir.file("a.db"));
  const int64_t run = store.begin_run({}).value();
  ASSERT_TRUE(store.enqueue({toy_kernel(kid(1))}).ok());
  KernelOutcome bad = toy_outcome(kid(1));
  bad.facts_json = "{not json";
  Status s = store.record(bad, run);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("facts"), std::string::npos) << s.error().to_string();
  EXPECT_EQ(store.kernel(kid(1)).value()->status, KernelStatus::kPending);
  EXPECT_TRUE(store.verdicts(kid(1)).value().empty());
}

TEST(Store, VerdictGeneratorsNameOnlyRunsThatJudged) {
  ScratchDir dir;
  Store store = open_store(dir.file("g.db"));
  const int64_t judged =
      store.begin_run({"0.1.0", "gen-global", 42, {"strict"}, "", "0/1"}).value();
  ASSERT_TRUE(store.enqueue({toy_kernel(kid(1)), toy_kernel(kid(2))}).ok());
  ASSERT_TRUE(store.record(toy_outcome(kid(1)), judged).ok());
  // a launcher's run, and a run that only saw a malformed row: no verdicts
  ASSERT_TRUE(store.begin_run({"0.1.0", "gen-launcher", 42, {"strict"}, "", "0/1"}).has_value());
  const int64_t bad = store.begin_run({"0.1.0", "gen-banded", 42, {"strict"}, "", "0/1"}).value();
  ASSERT_TRUE(
      store.record_malformed({"a.jsonl", 3, "toy/x", "level: not an integer"}, "toy", bad).ok());
  EXPECT_EQ(store.verdict_generators().value(), std::vector<std::string>{"gen-global"});
  ASSERT_TRUE(store.record(toy_outcome(kid(2)), bad).ok());
  EXPECT_EQ(store.verdict_generators().value(),
            (std::vector<std::string>{"gen-banded", "gen-global"}));
}

TEST(Store, ResumeRedoesUnfinishedKernelsOnly) {
  ScratchDir dir;
  const std::string path = dir.file("a.db");
  {
    Store store = open_store(path);
    const int64_t run = store.begin_run({}).value();
    ASSERT_TRUE(store.enqueue({toy_kernel(kid(1)), toy_kernel(kid(2)), toy_kernel(kid(3))}).ok());
    ASSERT_TRUE(store.record(toy_outcome(kid(1)), run).ok());
    ASSERT_TRUE(store.mark_running(kid(2), run).ok());  // then the process "dies"
  }
  Store store = open_store(path);
  EXPECT_EQ(store.todo().value(), (std::vector<std::string>{kid(2), kid(3)}));
  // Re-enqueueing the whole corpus leaves finished kernels alone.
  ASSERT_TRUE(store.enqueue({toy_kernel(kid(1)), toy_kernel(kid(2)), toy_kernel(kid(3))}).ok());
  EXPECT_EQ(store.kernel(kid(1)).value()->status, KernelStatus::kOk);
  EXPECT_EQ(store.kernel(kid(2)).value()->attempts, 1);
  const int64_t run = store.begin_run({}).value();
  const std::vector<std::string> todo = store.todo().value();
  for (const std::string& id : todo) ASSERT_TRUE(store.record(toy_outcome(id), run).ok());
  EXPECT_TRUE(store.todo().value().empty());
}

TEST(Store, KernelsWithFailingProbesComeFirst) {
  ScratchDir dir;
  Store store = open_store(dir.file("a.db"));
  const int64_t run = store.begin_run({}).value();
  ASSERT_TRUE(store.enqueue({toy_kernel(kid(1)), toy_kernel(kid(2))}).ok());
  ASSERT_TRUE(store.record(toy_outcome(kid(2), /*fail=*/true), run).ok());
  // An operator re-queues kid(2) (e.g. after a kcv upgrade): its failing probe is remembered.
  ASSERT_TRUE(store.reset(kid(2), "").ok());
  EXPECT_EQ(store.todo().value(), (std::vector<std::string>{kid(2), kid(1)}));
}

TEST(Store, RecordReplacesEarlierVerdicts) {
  ScratchDir dir;
  Store store = open_store(dir.file("a.db"));
  const int64_t run = store.begin_run({}).value();
  ASSERT_TRUE(store.enqueue({toy_kernel(kid(1))}).ok());
  ASSERT_TRUE(store.record(toy_outcome(kid(1), true), run).ok());
  KernelOutcome crash{kid(1), KernelStatus::kCrash, "worker died (SIGSEGV)", std::nullopt, {}};
  ASSERT_TRUE(store.record(crash, run).ok());
  EXPECT_TRUE(store.verdicts(kid(1)).value().empty());
  EXPECT_EQ(store.kernel(kid(1)).value()->message, "worker died (SIGSEGV)");
}

TEST(Store, RefusesUnknownKernelsAndUnfinishedStatuses) {
  ScratchDir dir;
  Store store = open_store(dir.file("a.db"));
  Status unknown = store.record(toy_outcome("nobody"), 1);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("kernel_id"), std::string::npos);
  ASSERT_TRUE(store.enqueue({toy_kernel(kid(1))}).ok());
  KernelOutcome pending = toy_outcome(kid(1));
  pending.status = KernelStatus::kPending;
  EXPECT_FALSE(store.record(pending, 1).ok());
  EXPECT_TRUE(store.verdicts(kid(1)).value().empty());
}

TEST(Store, RecordsMalformedRowsAsFinal) {
  ScratchDir dir;
  Store store = open_store(dir.file("a.db"));
  const int64_t run = store.begin_run({}).value();
  ASSERT_TRUE(
      store.record_malformed({"/x/toy.jsonl", 9, "", "level: missing required field"}, "toy", run)
          .ok());
  Expected<std::optional<KernelRow>> k = store.kernel("toy.jsonl:9");
  ASSERT_TRUE(k.has_value() && k->has_value());
  EXPECT_EQ((*k)->status, KernelStatus::kMalformed);
  EXPECT_EQ((*k)->message, "line 9: level: missing required field");
  EXPECT_TRUE(store.todo().value().empty());
}

TEST(Store, RefusesNewerSchemasAndForeignDatabases) {
  ScratchDir dir;
  { Store store = open_store(dir.file("new.db")); }
  exec_raw(dir.file("new.db"), "PRAGMA user_version = 99");
  Expected<Store> newer = Store::open(dir.file("new.db"));
  ASSERT_FALSE(newer.has_value());
  EXPECT_NE(newer.error().message.find("user_version"), std::string::npos);
  exec_raw(dir.file("foreign.db"), "CREATE TABLE t(x)");
  Expected<Store> foreign = Store::open(dir.file("foreign.db"));
  ASSERT_FALSE(foreign.has_value());
  EXPECT_NE(foreign.error().message.find("not a kcv audit store"), std::string::npos);
}

TEST(Store, EvidenceMustBeJson) {
  ScratchDir dir;
  Store store = open_store(dir.file("a.db"));
  const int64_t run = store.begin_run({}).value();
  ASSERT_TRUE(store.enqueue({toy_kernel(kid(1))}).ok());
  KernelOutcome bad = toy_outcome(kid(1));
  bad.verdicts[2].evidence_json = "{not json";
  Status s = store.record(bad, run);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("verdict EXC-01/strict"), std::string::npos)
      << s.error().to_string();
  EXPECT_EQ(store.kernel(kid(1)).value()->status, KernelStatus::kPending);
  EXPECT_TRUE(store.verdicts(kid(1)).value().empty());
}

}  // namespace
}  // namespace kcv::audit
