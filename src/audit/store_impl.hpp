// File: src/audit/store_impl.hpp
// Store::Impl (the open connection) and the schema entry points, shared by the store's write
// side, its read side, merge and the report queries.
#pragma once

#include "audit/sqlite_db.hpp"
#include "kcv/audit.hpp"

namespace kcv::audit {

struct Store::Impl {
  sql::Db db;
};

/// Opens `path` at the current schema: creates it in an empty file, migrates an older store (in
/// place; opened read-only, a private in-memory copy), refuses a newer one or a database that is
/// not a store. Sets the connection's pragmas (foreign keys; WAL and synchronous=FULL unless
/// read-only).
Expected<sql::Db> open_current_schema(const std::string& path, const StoreOptions& options);

/// The SQL list of final statuses, "('ok','crash',...)", for WHERE clauses.
const std::string& final_status_list();

/// The SQL timestamp expression (UTC, milliseconds).
inline constexpr const char* kNowSql = "strftime('%Y-%m-%dT%H:%M:%fZ','now')";

}  // namespace kcv::audit
