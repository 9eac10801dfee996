// File: src/audit/schema.cpp
// The store's schema, version kStoreSchemaVersion in PRAGMA user_version. An empty file gets
// the schema; a file with tables but user_version 0 is not ours and is refused; a newer
// version is refused (an older kcv must not write a store it does not understand). Version 1
// is the first, so there are no migrations yet: the next version adds them here, one function
// per step. Column meanings: docs/07_audit_store.md.
#include <fmt/format.h>

#include "audit/store_impl.hpp"

namespace kcv::audit {
namespace {

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

Status create_schema(sql::Db& db) {
  sql::Transaction tx(db);
  if (!tx.begun()) return tx.begun();
  Expected<int64_t> version = db.scalar("PRAGMA user_version");  // another process won the race
  if (!version) return version.error();
  if (*version == kStoreSchemaVersion) return tx.commit();
  if (Status s = db.exec(kSchemaV1); !s) return s;
  if (Status s = db.exec(fmt::format("PRAGMA user_version = {}", kStoreSchemaVersion)); !s)
    return s;
  return tx.commit();
}

}  // namespace

Status ensure_schema(sql::Db& db, bool read_only) {
  Expected<int64_t> version = db.scalar("PRAGMA user_version");
  if (!version) return version.error();
  if (*version > kStoreSchemaVersion) {
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("user_version: store schema {} is newer than this kcv ({})",
                                  *version, kStoreSchemaVersion),
                      "audit store " + db.path());
  }
  if (*version == kStoreSchemaVersion) return {};
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
  return create_schema(db);
}

}  // namespace kcv::audit
