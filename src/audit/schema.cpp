// File: src/audit/schema.cpp
// The store's schema, version kStoreSchemaVersion in PRAGMA user_version, and its migrations.
// A store is always built by the same path: the version-1 DDL, then each migration step in
// order (one function per step), all in one transaction, so a fresh store and a migrated old one
// have the same tables. A file with tables but user_version 0 is not ours and is refused; a
// newer version is refused (an older kcv must not write a store it does not understand). An
// older store opened for writing is migrated in place and keeps every row; one opened
// read-only (`kcv report`, a merge source) is copied into memory and the copy is migrated, so a
// published store is never rewritten by reading it. SQLite cannot alter a CHECK constraint, so a
// step that changes one rebuilds the table (create new, copy, drop, rename, re-index) with
// foreign keys off for the step (the drop would otherwise cascade into verdicts) and a
// foreign_key_check before the commit. Column meanings: docs/07_audit_store.md.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include "audit/store_impl.hpp"

namespace kcv::audit {
namespace {

// Version 1, as first released. Never edited: later versions are migration steps below.
constexpr const char* kSchemaV1 = R"sql(
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
)sql";

// Version 2: verdicts name their finding and the failing probe's scope ('' = recorded before
// findings were typed); kernels keep the reference's facts (JSON) and accept the statuses that
// separate a candidate's own failure at the reference shape (runtime_error, bad_output) and
// harness trouble (reference_error, environment) from gate verdicts.
constexpr const char* kMigrateV1ToV2 = R"sql(
CREATE TABLE kernels_v2(
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
    'compile_error','import_error','malformed','error','runtime_error','bad_output',
    'reference_error','environment')),
  message TEXT NOT NULL DEFAULT '',
  replica_verdict TEXT CHECK(replica_verdict IN ('accepted','rejected')),
  run_id INTEGER REFERENCES runs(run_id),
  attempts INTEGER NOT NULL DEFAULT 0,
  queued_at TEXT NOT NULL,
  started_at TEXT,
  finished_at TEXT,
  facts TEXT NOT NULL DEFAULT '{}' CHECK(json_valid(facts))
);
INSERT INTO kernels_v2(kernel_id, corpus, level, problem_id, problem_name, language, op_class,
  determinism_declared, original_verdict, status, message, replica_verdict, run_id, attempts,
  queued_at, started_at, finished_at)
SELECT kernel_id, corpus, level, problem_id, problem_name, language, op_class,
  determinism_declared, original_verdict, status, message, replica_verdict, run_id, attempts,
  queued_at, started_at, finished_at FROM kernels;
DROP TABLE kernels;
ALTER TABLE kernels_v2 RENAME TO kernels;
CREATE INDEX kernels_by_status ON kernels(status);
ALTER TABLE verdicts ADD COLUMN finding TEXT NOT NULL DEFAULT '';
ALTER TABLE verdicts ADD COLUMN scope TEXT NOT NULL DEFAULT '';
)sql";

// Version 3: integrity. Kernels keep the content hash of the row their verdicts judged
// (row_hash), the hash a later run read for the same id when it differs (seen_hash: stale), and
// a MAC; verdicts keep a MAC; store_meta holds the store id (which names its key file), the key
// check and the manifest of signed kernels (docs/07_audit_store.md, "Integrity"). The kernels
// table is rebuilt for the statuses that end poison rows and killed loads.
constexpr const char* kMigrateV2ToV3 = R"sql(
CREATE TABLE kernels_v3(
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
    'compile_error','import_error','malformed','error','runtime_error','bad_output',
    'reference_error','environment','poison','load_killed','out_of_memory')),
  message TEXT NOT NULL DEFAULT '',
  replica_verdict TEXT CHECK(replica_verdict IN ('accepted','rejected')),
  run_id INTEGER REFERENCES runs(run_id),
  attempts INTEGER NOT NULL DEFAULT 0,
  queued_at TEXT NOT NULL,
  started_at TEXT,
  finished_at TEXT,
  facts TEXT NOT NULL DEFAULT '{}' CHECK(json_valid(facts)),
  row_hash TEXT NOT NULL DEFAULT '',
  seen_hash TEXT NOT NULL DEFAULT '',
  mac TEXT NOT NULL DEFAULT ''
);
INSERT INTO kernels_v3(kernel_id, corpus, level, problem_id, problem_name, language, op_class,
  determinism_declared, original_verdict, status, message, replica_verdict, run_id, attempts,
  queued_at, started_at, finished_at, facts)
SELECT kernel_id, corpus, level, problem_id, problem_name, language, op_class,
  determinism_declared, original_verdict, status, message, replica_verdict, run_id, attempts,
  queued_at, started_at, finished_at, facts FROM kernels;
DROP TABLE kernels;
ALTER TABLE kernels_v3 RENAME TO kernels;
CREATE INDEX kernels_by_status ON kernels(status);
ALTER TABLE verdicts ADD COLUMN mac TEXT NOT NULL DEFAULT '';
CREATE TABLE store_meta(
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
)sql";

Status create_v1(sql::Db& db) { return db.exec(kSchemaV1); }
Status migrate_v1_to_v2(sql::Db& db) { return db.exec(kMigrateV1ToV2); }
Status migrate_v2_to_v3(sql::Db& db) { return db.exec(kMigrateV2ToV3); }

// kSteps[v] takes a store from version v to v + 1 (version 0: an empty database).
using Step = Status (*)(sql::Db&);
constexpr std::array<Step, kStoreSchemaVersion> kSteps = {create_v1, migrate_v1_to_v2,
                                                          migrate_v2_to_v3};

Status check_foreign_keys(sql::Db& db) {
  Expected<int64_t> broken = db.scalar("SELECT count(*) FROM pragma_foreign_key_check");
  if (!broken) return broken.error();
  if (*broken == 0) return {};
  return make_error(ErrorCode::kInternal,
                    fmt::format("migration: {} row(s) break a foreign key", *broken),
                    "audit store " + db.path());
}

Status upgrade_in_transaction(sql::Db& db) {
  sql::Transaction tx(db);
  if (!tx.begun()) return tx.begun();
  Expected<int64_t> version = db.scalar("PRAGMA user_version");  // another process may have won
  if (!version) return version.error();
  for (int64_t v = *version; v < kStoreSchemaVersion; ++v) {
    if (Status s = kSteps[static_cast<std::size_t>(v)](db); !s) return s;
  }
  if (Status s = check_foreign_keys(db); !s) return s;
  if (Status s = db.exec(fmt::format("PRAGMA user_version = {}", kStoreSchemaVersion)); !s)
    return s;
  return tx.commit();
}

// PRAGMA foreign_keys is a no-op inside a transaction, so it is switched around it.
Status upgrade(sql::Db& db) {
  if (Status s = db.exec_unfaulted("PRAGMA foreign_keys=OFF"); !s) return s;
  Status upgraded = upgrade_in_transaction(db);
  if (Status s = db.exec_unfaulted("PRAGMA foreign_keys=ON"); !s && upgraded) return s;
  return upgraded;
}

Status configure(sql::Db& db, bool read_only) {
  if (Status s = db.exec_unfaulted("PRAGMA foreign_keys=ON"); !s) return s;
  if (read_only) return {};
  if (Status s = db.exec_unfaulted("PRAGMA journal_mode=WAL"); !s) return s;
  return db.exec_unfaulted("PRAGMA synchronous=FULL");
}

// The schema version of `db`, checked: newer than this kcv, or tables without a version, or an
// empty database opened read-only, is an error.
Expected<int64_t> checked_version(sql::Db& db, bool read_only) {
  Expected<int64_t> version = db.scalar("PRAGMA user_version");
  if (!version) return version.error();
  if (*version > kStoreSchemaVersion) {
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("user_version: store schema {} is newer than this kcv ({})",
                                  *version, kStoreSchemaVersion),
                      "audit store " + db.path());
  }
  if (*version != 0) return *version;
  Expected<int64_t> tables = db.scalar("SELECT count(*) FROM sqlite_master");
  if (!tables) return tables.error();
  if (*tables != 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "user_version: 0 with existing tables: not a kcv audit store",
                      "audit store " + db.path());
  }
  if (read_only) {
    return make_error(ErrorCode::kNotFound, "empty database opened read-only",
                      "audit store " + db.path());
  }
  return int64_t{0};
}

Expected<sql::Db> migrated_copy(const std::string& path, const StoreOptions& options) {
  Expected<sql::Db> mem = sql::Db::open_memory_copy(path, options);
  if (!mem) return mem.error();
  if (Status s = configure(*mem, /*read_only=*/true); !s) return s.error();
  if (Status s = upgrade(*mem); !s) return s.error();
  return mem;
}

using SchemaRow = std::array<std::string, 3>;  // type, name, sql

Expected<std::vector<SchemaRow>> schema_of(sql::Db& db) {
  Expected<sql::Stmt> q =
      db.prepare("SELECT type, name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name");
  if (!q) return q.error();
  std::vector<SchemaRow> out;
  for (;;) {
    Expected<bool> row = q->step();
    if (!row) return row.error();
    if (!*row) return out;
    out.push_back({q->col_text(0), q->col_text(1), q->col_text(2)});
  }
}

// kcv's own schema, as a fresh store built by the one path (version-1 DDL, then each step) has
// it: what every store at the current version must have exactly.
Expected<std::vector<SchemaRow>> build_expected_schema() {
  Expected<sql::Db> db = sql::Db::open(":memory:", StoreOptions{});
  if (!db) return db.error();
  if (Status s = configure(*db, /*read_only=*/false); !s) return s.error();
  if (Status s = upgrade(*db); !s) return s.error();
  return schema_of(*db);
}

const Expected<std::vector<SchemaRow>>& expected_schema() {
  static const Expected<std::vector<SchemaRow>> schema = build_expected_schema();
  return schema;
}

}  // namespace

Expected<std::vector<std::string>> schema_problems(sql::Db& db) {
  const Expected<std::vector<SchemaRow>>& want = expected_schema();
  if (!want) return want.error();
  Expected<std::vector<SchemaRow>> have = schema_of(db);
  if (!have) return have.error();
  std::vector<std::string> out;
  for (const SchemaRow& h : *have) {
    const auto same_name = [&](const SchemaRow& w) { return w[0] == h[0] && w[1] == h[1]; };
    const auto it = std::find_if(want->begin(), want->end(), same_name);
    if (it == want->end())
      out.push_back(fmt::format("{} '{}' is not kcv's", h[0], h[1]));
    else if ((*it)[2] != h[2])
      out.push_back(fmt::format("{} '{}' differs from kcv's definition", h[0], h[1]));
  }
  for (const SchemaRow& w : *want) {
    const auto same_name = [&](const SchemaRow& h) { return w[0] == h[0] && w[1] == h[1]; };
    if (std::none_of(have->begin(), have->end(), same_name))
      out.push_back(fmt::format("{} '{}' is missing", w[0], w[1]));
  }
  return out;
}

Expected<sql::Db> open_current_schema(const std::string& path, const StoreOptions& options) {
  Expected<sql::Db> db = sql::Db::open(path, options);
  if (!db) return db.error();
  if (Status s = configure(*db, options.read_only); !s) return s.error();
  Expected<int64_t> version = checked_version(*db, options.read_only);
  if (!version) return version.error();
  if (*version == kStoreSchemaVersion) return db;
  if (options.read_only) return migrated_copy(path, options);
  if (Status s = upgrade(*db); !s) return s.error();
  return db;
}

}  // namespace kcv::audit
