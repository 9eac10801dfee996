// File: src/audit/sqlite_db.cpp
// The SQLite wrappers. Errors carry SQLite's own message plus what we were doing and the
// store's path, so a failed write reads "audit store a.db: insert verdict: disk I/O error".
#include "audit/sqlite_db.hpp"

#include <fmt/format.h>

namespace kcv::audit::sql {
namespace {

bool is_commit(std::string_view sql) {
  return sql.substr(0, 6) == "COMMIT" || sql.substr(0, 3) == "END";
}

// A store's file may have been written by anyone who could reach it (a candidate, without a
// sandbox). kcv's connections never run what such a writer may have left in the schema:
// triggers and views are off, and the schema cannot be written through the connection
// (defensive). The schema itself is checked against kcv's (schema.cpp) at open and before every
// commit, so a changed CHECK or default is refused too. (An untrusted schema, SQLite's other
// switch, would also refuse json_valid in kcv's own CHECK constraints.)
void harden(sqlite3* db) {
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
#ifdef SQLITE_DBCONFIG_ENABLE_VIEW
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, nullptr);
#endif
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
}

}  // namespace

// An empty view may have no data pointer, which SQLite would bind as NULL: bind "" instead.
Stmt& Stmt::bind(int i, std::string_view text) {
  sqlite3_bind_text(stmt_, i, text.data() != nullptr ? text.data() : "",
                    static_cast<int>(text.size()), SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::bind(int i, int64_t value) {
  sqlite3_bind_int64(stmt_, i, value);
  return *this;
}
Stmt& Stmt::bind(int i, double value) {
  sqlite3_bind_double(stmt_, i, value);
  return *this;
}
Stmt& Stmt::bind(int i, const std::optional<std::string>& text) {
  return text ? bind(i, std::string_view(*text)) : bind_null(i);
}
Stmt& Stmt::bind(int i, const std::optional<double>& value) {
  return value ? bind(i, *value) : bind_null(i);
}
Stmt& Stmt::bind_null(int i) {
  sqlite3_bind_null(stmt_, i);
  return *this;
}

Expected<bool> Stmt::step() {
  const char* sql = sqlite3_sql(stmt_);
  if (!sqlite3_stmt_readonly(stmt_)) {
    if (const int rc = db_->fault(SqlOp::kWrite, sql); rc != 0) return db_->error(rc, sql);
  } else if (is_commit(sql)) {
    if (const int rc = db_->fault(SqlOp::kCommit, sql); rc != 0) return db_->error(rc, sql);
  }
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return db_->error(rc, sql);
}

Status Stmt::run() {
  for (;;) {
    Expected<bool> more = step();
    if (!more) return more.error();
    if (!*more) return {};
  }
}

void Stmt::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::string Stmt::col_text(int i) const {
  const auto* p = sqlite3_column_text(stmt_, i);
  return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, i)) : "";
}
std::optional<std::string> Stmt::col_opt_text(int i) const {
  if (col_null(i)) return std::nullopt;
  return col_text(i);
}
std::optional<double> Stmt::col_opt_double(int i) const {
  if (col_null(i)) return std::nullopt;
  return col_double(i);
}

Expected<Db> Db::open(const std::string& path, const StoreOptions& options) {
  sqlite3* raw = nullptr;
  const int flags =
      options.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Db db(raw, options.fault_hook, path);
  if (rc != SQLITE_OK) return db.error(rc, "open");
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, options.busy_timeout_ms);
  harden(raw);
  return db;
}

Expected<Db> Db::open_memory_copy(const std::string& path, const StoreOptions& options) {
  StoreOptions read_only = options;
  read_only.read_only = true;
  Expected<Db> file = open(path, read_only);
  if (!file) return file.error();
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(":memory:", &raw, SQLITE_OPEN_READWRITE, nullptr);
  Db mem(raw, options.fault_hook, path);
  if (rc != SQLITE_OK) return mem.error(rc, "open an in-memory copy");
  sqlite3_extended_result_codes(raw, 1);
  harden(raw);
  sqlite3_backup* backup = sqlite3_backup_init(raw, "main", file->handle(), "main");
  if (backup == nullptr) return mem.error(sqlite3_errcode(raw), "copy into memory");
  const int step = sqlite3_backup_step(backup, -1);
  sqlite3_backup_finish(backup);
  if (step != SQLITE_DONE) return file->error(step, "copy into memory");
  return mem;
}

Expected<Stmt> Db::prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) return error(rc, fmt::format("prepare `{}`", sql));
  return Stmt(this, stmt);
}

Status Db::exec(std::string_view sql) {
  if (const int rc = fault(is_commit(sql) ? SqlOp::kCommit : SqlOp::kWrite, sql); rc != 0) {
    return error(rc, sql);
  }
  return exec_unfaulted(sql);
}

Status Db::exec_unfaulted(std::string_view sql) {
  const std::string text(sql);
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return error(rc, sql);
  return {};
}

Expected<int64_t> Db::scalar(std::string_view sql) {
  Expected<Stmt> stmt = prepare(sql);
  if (!stmt) return stmt.error();
  Expected<bool> row = stmt->step();
  if (!row) return row.error();
  if (!*row) return make_error(ErrorCode::kInternal, fmt::format("`{}` returned no row", sql));
  return stmt->col_int(0);
}

Error Db::error(int rc, std::string_view what) const {
  const char* detail =
      db_ != nullptr && sqlite3_errcode(db_) == rc ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  const ErrorCode code =
      rc == SQLITE_CANTOPEN || rc == SQLITE_NOTADB ? ErrorCode::kNotFound : ErrorCode::kIo;
  return make_error(code, fmt::format("{}: {}", what, detail), "audit store " + path_);
}

Transaction::Transaction(Db& db) : db_(db) {
  begun_ = db_.exec_unfaulted("BEGIN IMMEDIATE");
  open_ = begun_.ok();
}

Transaction::~Transaction() {
  if (open_) (void)db_.exec_unfaulted("ROLLBACK");
}

Status Transaction::commit() {
  Status s = db_.exec("COMMIT");
  if (s.ok()) open_ = false;
  return s;
}

}  // namespace kcv::audit::sql
