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

/// Creates the schema in an empty database, or checks user_version of an existing one
/// (newer than this kcv: error; not a kcv store: error).
Status ensure_schema(sql::Db& db, bool read_only);

/// The SQL list of final statuses, "('ok','crash',...)", for WHERE clauses.
const std::string& final_status_list();

/// The SQL timestamp expression (UTC, milliseconds).
inline constexpr const char* kNowSql = "strftime('%Y-%m-%dT%H:%M:%fZ','now')";

}  // namespace kcv::audit
