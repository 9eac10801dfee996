// File: src/audit/store_impl.hpp
// Store::Impl (the open connection) and the schema entry points, shared by the store's write
// side, its read side, merge and the report queries.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "audit/integrity.hpp"
#include "audit/sqlite_db.hpp"
#include "kcv/audit.hpp"

namespace kcv::audit {

struct Store::Impl {
  sql::Db db;
  std::optional<Signer> signer;  // the store's key; absent: an unsigned store read as it is
  std::string key_file;          // where the key is (or was looked for)
  std::string store_id;          // store_meta's; empty before schema 3 or read-only unsigned
  std::string key_problem;       // why a store with an id has no signer (read-only opens)
};

/// The signer of a store opened for writing (an internal error otherwise).
Expected<const Signer*> writer_signer(Store::Impl& impl);
/// Fails when the schema holds anything that is not kcv's: called before every commit.
Status check_schema_before_commit(sql::Db& db);

/// Opens `path` at the current schema: creates it in an empty file, migrates an older store (in
/// place; opened read-only, a private in-memory copy), refuses a newer one or a database that is
/// not a store. Sets the connection's pragmas (foreign keys; WAL and synchronous=FULL unless
/// read-only).
Expected<sql::Db> open_current_schema(const std::string& path, const StoreOptions& options);

/// Schema objects of `db` that are not kcv's, or differ from kcv's definition, or are missing
/// (against a fresh store of this version, built by the same steps).
Expected<std::vector<std::string>> schema_problems(sql::Db& db);

/// The SQL list of final statuses, "('ok','crash',...)", for WHERE clauses.
const std::string& final_status_list();

/// The SQL timestamp expression (UTC, milliseconds).
inline constexpr const char* kNowSql = "strftime('%Y-%m-%dT%H:%M:%fZ','now')";

}  // namespace kcv::audit
