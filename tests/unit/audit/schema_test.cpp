// File: tests/unit/audit/schema_test.cpp
// Store schema versions and the migration from version 1. A version-1 store is built here with
// the version-1 DDL as first released (kept verbatim below, independent of the code's copy, so
// an edit there cannot make this test agree with itself) and filled with raw SQL. Opened for
// writing by this kcv it is migrated in place: every row survives with its values, the new
// columns hold their defaults ('' finding and scope, '{}' facts), the new statuses are accepted,
// and its schema is that of a fresh store. Opened read-only it is migrated in memory and the
// file is left as it was. Merging a version-1 source into a current store keeps its rows, and
// its untyped fails keep the merged floor unavailable.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <map>

#include "audit/store_impl.hpp"
#include "audit_fixtures.hpp"

namespace kcv::audit {
namespace {

using testing::ScratchDir;

constexpr const char* kV1Ddl = R"sql(
CREATE TABLE runs(
  run_id INTEGER PRIMARY KEY,
  kcv_version TEXT NOT NULL,
  generator_version TEXT NOT NULL,
  seed TEXT NOT NULL,
  profiles TEXT NOT NULL,
  command_line TEXT NOT NULL,
  shard TEXT NOT NULL,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  origin TEXT
);
CREATE TABLE kernels(
  kernel_id TEXT PRIMARY KEY,
  corpus TEXT NOT NULL,
  level INTEGER NOT NULL,
  problem_id INTEGER NOT NULL,
  problem_name TEXT NOT NULL,
  language TEXT NOT NULL,
  op_class TEXT NOT NULL,
  determinism_declared INTEGER NOT NULL,
  original_verdict TEXT,
  status TEXT NOT NULL CHECK(status IN ('pending','running','ok','crash','timeout',
    'compile_error','import_error','malformed','error')),
  message TEXT NOT NULL DEFAULT '',
  replica_verdict TEXT CHECK(replica_verdict IN ('accepted','rejected')),
  run_id INTEGER REFERENCES runs(run_id),
  attempts INTEGER NOT NULL DEFAULT 0,
  queued_at TEXT NOT NULL,
  started_at TEXT,
  finished_at TEXT
);
CREATE INDEX kernels_by_status ON kernels(status);
CREATE TABLE verdicts(
  kernel_id TEXT NOT NULL REFERENCES kernels(kernel_id),
  gate TEXT NOT NULL,
  profile TEXT NOT NULL,
  verdict TEXT NOT NULL CHECK(verdict IN ('pass','fail','not_applicable','error')),
  reason TEXT NOT NULL DEFAULT '',
  worst_ratio REAL,
  bits_lost REAL,
  evidence TEXT NOT NULL DEFAULT '{}' CHECK(json_valid(evidence)),
  probe_token TEXT NOT NULL DEFAULT '',
  run_id INTEGER REFERENCES runs(run_id),
  PRIMARY KEY(kernel_id, gate, profile)
) WITHOUT ROWID;
CREATE TABLE failing_probes(
  kernel_id TEXT NOT NULL REFERENCES kernels(kernel_id),
  gate TEXT NOT NULL,
  profile TEXT NOT NULL,
  probe_token TEXT NOT NULL,
  run_id INTEGER REFERENCES runs(run_id),
  recorded_at TEXT NOT NULL,
  PRIMARY KEY(kernel_id, gate, profile, probe_token)
) WITHOUT ROWID;
CREATE TABLE merges(
  merge_id INTEGER PRIMARY KEY,
  source TEXT NOT NULL,
  run_offset INTEGER NOT NULL,
  kernels_added INTEGER NOT NULL,
  verdicts_added INTEGER NOT NULL,
  merged_at TEXT NOT NULL
);
PRAGMA user_version = 1;
)sql";

// Two runs; k-ok (ok, CMP-01 fails with a probe, EXC-01 passes), k-crash (crash, one pass),
// k-pending; one merges row.
constexpr const char* kV1Rows = R"sql(
INSERT INTO runs VALUES(1,'0.1.0','gen-a','42','strict','kcv audit a','0/1',
  '2026-01-01T00:00:00.000Z','2026-01-01T01:00:00.000Z',NULL);
INSERT INTO runs VALUES(2,'0.1.0','gen-a','42','strict,pytorch-eager','kcv audit b','1/2',
  '2026-01-02T00:00:00.000Z',NULL,'s1.db run 1');
INSERT INTO kernels VALUES('k-ok','toy',1,7,'7_Toy','cuda','reduction',0,'accepted','ok','',
  'accepted',1,1,'2026-01-01T00:00:01.000Z','2026-01-01T00:00:02.000Z','2026-01-01T00:00:03.000Z');
INSERT INTO kernels VALUES('k-crash','toy',2,8,'8_Toy','triton','matmul',1,'rejected','crash',
  'worker died: SIGSEGV','rejected',2,3,'2026-01-01T00:00:01.000Z',NULL,'2026-01-02T00:00:09.000Z');
INSERT INTO kernels VALUES('k-pending','toy',1,9,'9_Toy','cuda','elementwise',1,NULL,'pending',
  '',NULL,NULL,0,'2026-01-01T00:00:01.000Z',NULL,NULL);
INSERT INTO verdicts VALUES('k-ok','CMP-01','strict','fail','',3.5,NULL,'{"summary":"x"}',
  '{"probe":1}',1);
INSERT INTO verdicts VALUES('k-ok','EXC-01','strict','pass','',NULL,1.25,'{}','',1);
INSERT INTO verdicts VALUES('k-crash','CMP-01','strict','pass','',0.5,NULL,'{}','',2);
INSERT INTO failing_probes VALUES('k-ok','CMP-01','strict','{"probe":1}',1,
  '2026-01-01T00:00:03.000Z');
INSERT INTO merges VALUES(1,'s1.db',1,2,1,'2026-01-02T00:00:10.000Z');
)sql";

void exec_raw(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

void make_v1_store(const std::string& path) {
  exec_raw(path, kV1Ddl);
  exec_raw(path, kV1Rows);
}

// Every row of a query as text, one string per row: "a|b|NULL|...".
std::vector<std::string> rows_of(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &q, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  std::vector<std::string> out;
  while (sqlite3_step(q) == SQLITE_ROW) {
    std::string row;
    for (int c = 0; c < sqlite3_column_count(q); ++c) {
      const auto* t = sqlite3_column_text(q, c);
      if (c > 0) row += '|';
      row += t ? reinterpret_cast<const char*>(t) : "NULL";
    }
    out.push_back(row);
  }
  sqlite3_finalize(q);
  sqlite3_close(db);
  return out;
}

// The rows of a table, ordered by its first three columns.
std::vector<std::string> dump(const std::string& path, const std::string& table,
                              const std::string& columns) {
  return rows_of(path, "SELECT " + columns + " FROM " + table + " ORDER BY 1, 2, 3");
}

int64_t scalar(const std::string& path, const std::string& sql) {
  const std::vector<std::string> rows = rows_of(path, sql);
  return rows.empty() ? -1 : std::stoll(rows[0]);
}

const char* kV1KernelColumns =
    "kernel_id, corpus, level, problem_id, problem_name, language, op_class, "
    "determinism_declared, original_verdict, status, message, replica_verdict, run_id, attempts, "
    "queued_at, started_at, finished_at";
const char* kV1VerdictColumns =
    "kernel_id, gate, profile, verdict, reason, worst_ratio, bits_lost, evidence, probe_token, "
    "run_id";

TEST(Schema, FreshStoreIsTheCurrentVersion) {
  ScratchDir dir;
  { Store store = Store::open(dir.file("a.db")).value(); }
  EXPECT_EQ(scalar(dir.file("a.db"), "PRAGMA user_version"), kStoreSchemaVersion);
  EXPECT_EQ(kStoreSchemaVersion, 3);
}

TEST(Schema, MigratesAVersionOneStoreKeepingEveryRow) {
  ScratchDir dir;
  const std::string path = dir.file("v1.db");
  make_v1_store(path);
  const auto kernels_before = dump(path, "kernels", kV1KernelColumns);
  const auto verdicts_before = dump(path, "verdicts", kV1VerdictColumns);
  const auto runs_before = dump(path, "runs", "*");
  const auto probes_before = dump(path, "failing_probes", "*");
  const auto merges_before = dump(path, "merges", "*");
  ASSERT_EQ(kernels_before.size(), 3u);
  ASSERT_EQ(verdicts_before.size(), 3u);

  Expected<Store> opened = Store::open(path);
  ASSERT_TRUE(opened.has_value()) << opened.error().to_string();
  Store store = std::move(opened).value();
  EXPECT_EQ(scalar(path, "PRAGMA user_version"), 3);
  EXPECT_EQ(dump(path, "kernels", kV1KernelColumns), kernels_before);
  EXPECT_EQ(dump(path, "verdicts", kV1VerdictColumns), verdicts_before);
  EXPECT_EQ(dump(path, "runs", "*"), runs_before);
  EXPECT_EQ(dump(path, "failing_probes", "*"), probes_before);
  EXPECT_EQ(dump(path, "merges", "*"), merges_before);
  EXPECT_EQ(dump(path, "verdicts", "kernel_id, gate, profile, finding, scope"),
            (std::vector<std::string>{"k-crash|CMP-01|strict||", "k-ok|CMP-01|strict||",
                                      "k-ok|EXC-01|strict||"}));
  EXPECT_EQ(scalar(path, "SELECT count(*) FROM kernels WHERE facts='{}'"), 3);
  EXPECT_EQ(store.integrity_check().value(), "ok");
  EXPECT_EQ(scalar(path, "SELECT count(*) FROM pragma_foreign_key_check"), 0);
  EXPECT_EQ(scalar(path, "SELECT count(*) FROM sqlite_master WHERE name='kernels_by_status'"), 1);

  // The store works as a current one: reads, resume, and the new statuses and facts.
  const KernelRow ok = store.kernel("k-ok").value().value();
  EXPECT_EQ(ok.info.op_class, "reduction");
  EXPECT_FALSE(ok.info.determinism_declared);
  EXPECT_EQ(ok.attempts, 1);
  EXPECT_EQ(ok.facts_json, "{}");
  EXPECT_EQ(store.failing_probes("k-ok").value().size(), 1u);
  EXPECT_EQ(store.todo().value(), std::vector<std::string>{"k-pending"});
  KernelOutcome raised{"k-pending", KernelStatus::kRuntimeError, "ValueError", std::nullopt, {}};
  raised.facts_json = R"({"ops":["add"]})";
  ASSERT_TRUE(store.record(raised, 2).ok());
  EXPECT_EQ(store.kernel("k-pending").value()->status, KernelStatus::kRuntimeError);
  EXPECT_EQ(store.kernel("k-pending").value()->facts_json, R"({"ops":["add"]})");
}

// A migrated store's rows were not signed by the run that recorded them: they stay unsigned
// (verify() says so), and only what this kcv records is signed.
TEST(Schema, AMigratedStoreKeepsItsRowsUnsignedAndSignsNewOnes) {
  ScratchDir dir;
  const std::string path = dir.file("v1.db");
  make_v1_store(path);
  Store store = Store::open(path).value();
  Integrity in = store.verify().value();
  EXPECT_EQ(in.state, Integrity::State::kUnsigned);
  EXPECT_EQ(in.unsigned_kernels, 2);  // k-ok, k-crash; k-pending is not final
  EXPECT_EQ(in.signed_kernels, 0);
  ASSERT_TRUE(store.record({"k-pending", KernelStatus::kOk, "", std::nullopt, {}}, 2).ok());
  ASSERT_TRUE(store.record({"k-crash", KernelStatus::kCrash, "again", std::nullopt, {}}, 2).ok());
  in = store.verify().value();
  EXPECT_EQ(in.state, Integrity::State::kUnsigned) << in.problems.size();
  EXPECT_EQ(in.unsigned_kernels, 1);
  EXPECT_EQ(in.signed_kernels, 2);
  // Stripping a signed row to pass it off as an old one is caught by the manifest.
  exec_raw(path, "UPDATE kernels SET mac='' WHERE kernel_id='k-crash'");
  EXPECT_EQ(store.verify().value().state, Integrity::State::kFailed);
}

// The migrated store and a fresh one have the same tables, columns, constraints and indexes.
TEST(Schema, AMigratedStoreHasTheSchemaOfAFreshOne) {
  ScratchDir dir;
  make_v1_store(dir.file("v1.db"));
  { Store migrated = Store::open(dir.file("v1.db")).value(); }
  { Store fresh = Store::open(dir.file("fresh.db")).value(); }
  const char* schema = "type, name, tbl_name, sql";
  EXPECT_EQ(dump(dir.file("v1.db"), "sqlite_master", schema),
            dump(dir.file("fresh.db"), "sqlite_master", schema));
}

// Read-only (kcv report, a merge source): the file keeps version 1; the queries see the rows.
TEST(Schema, AReadOnlyOpenMigratesAnInMemoryCopy) {
  ScratchDir dir;
  const std::string path = dir.file("v1.db");
  make_v1_store(path);
  StoreOptions ro;
  ro.read_only = true;
  Expected<Store> opened = Store::open(path, ro);
  ASSERT_TRUE(opened.has_value()) << opened.error().to_string();
  EXPECT_EQ(scalar(path, "PRAGMA user_version"), 1);
  EXPECT_EQ(scalar(path, "SELECT count(*) FROM pragma_table_info('verdicts') WHERE name='finding'"),
            0);
  EXPECT_EQ(opened->kernels().value().size(), 3u);
  EXPECT_EQ(opened->verdicts("k-ok").value().size(), 2u);
  const Headline h = headline(*opened).value();
  ASSERT_EQ(h.profiles.size(), 1u);
  EXPECT_EQ(h.profiles[0].judged.any_violation.hits, 1);  // k-ok; k-crash is a status
  EXPECT_EQ(h.profiles[0].judged.any_violation.total, 1);
  EXPECT_FALSE(h.profiles[0].judged.tf_floor.has_value());  // findings were not recorded
  EXPECT_EQ(h.profiles[0].untyped_kernels, 1);
}

TEST(Schema, EveryStatusIsAcceptedByTheSchema) {
  ScratchDir dir;
  Store store = Store::open(dir.file("a.db")).value();
  const int64_t run = store.begin_run({}).value();
  for (int i = 0; i <= static_cast<int>(KernelStatus::kOutOfMemory); ++i) {
    const auto s = static_cast<KernelStatus>(i);
    ASSERT_EQ(parse_status(status_name(s)).value(), s);
    if (!is_final(s)) continue;
    const std::string id(status_name(s));
    ASSERT_TRUE(store.enqueue({testing::toy_kernel(id)}).ok());
    const Status st = store.record({id, s, "", std::nullopt, {}}, run);
    ASSERT_TRUE(st.ok()) << id << ": " << st.error().to_string();
    EXPECT_EQ(store.kernel(id).value()->status, s);
  }
}

// Merge reads every source through Store::open(read-only), so a version-1 shard merges into a
// current store: its rows arrive with '' findings, and the merged floor is unavailable.
TEST(Schema, MergesAVersionOneSourceIntoACurrentStore) {
  ScratchDir dir;
  make_v1_store(dir.file("v1.db"));
  {
    Store dest = Store::open(dir.file("all.db")).value();
    const int64_t run = dest.begin_run({}).value();
    ASSERT_TRUE(dest.enqueue({testing::toy_kernel("k-new")}).ok());
    ASSERT_TRUE(dest.record(testing::toy_outcome("k-new", /*fail=*/true), run).ok());
  }
  Expected<MergeSummary> m = merge(dir.file("all.db"), {dir.file("v1.db")});
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  EXPECT_EQ(m->verdicts_added, 3);
  const std::string all = dir.file("all.db");
  EXPECT_EQ(scalar(all, "SELECT count(*) FROM kernels"), 4);
  EXPECT_EQ(scalar(all, "SELECT count(*) FROM verdicts WHERE finding=''"), 3);
  EXPECT_EQ(scalar(all, "SELECT count(*) FROM verdicts WHERE finding='value_over_bound'"), 1);
  StoreOptions ro;
  ro.read_only = true;
  const Headline h = headline(Store::open(all, ro).value()).value();
  ASSERT_EQ(h.profiles.size(), 1u);
  EXPECT_EQ(h.profiles[0].judged.any_violation.hits, 2);  // k-new, k-ok
  EXPECT_FALSE(h.profiles[0].judged.tf_floor.has_value());
}

}  // namespace
}  // namespace kcv::audit
