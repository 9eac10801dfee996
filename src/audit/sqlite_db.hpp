// File: src/audit/sqlite_db.hpp
// Small RAII wrappers over the SQLite C API (a connection, a prepared statement, an immediate
// transaction). They are also the fault-injection seam: every statement that writes, and every
// COMMIT, first asks the connection's FaultHook, and a non-zero answer is treated exactly like
// that result code coming back from SQLite. Reads and ROLLBACK are never faulted, so cleanup
// after a fault always runs (SQLite's own test harness makes the same choice for rollback).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kcv/audit.hpp"
#include "kcv/expected.hpp"

namespace kcv::audit::sql {

class Db;

class Stmt {
 public:
  Stmt(Db* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Stmt(Stmt&& o) noexcept : db_(o.db_), stmt_(o.stmt_) { o.stmt_ = nullptr; }
  Stmt& operator=(Stmt&&) = delete;
  Stmt(const Stmt&) = delete;
  ~Stmt() { sqlite3_finalize(stmt_); }

  // Parameters are 1-based, as in SQLite.
  Stmt& bind(int i, std::string_view text);
  Stmt& bind(int i, const std::string& text) { return bind(i, std::string_view(text)); }
  Stmt& bind(int i, const char* text) { return bind(i, std::string_view(text)); }
  Stmt& bind(int i, int64_t value);
  Stmt& bind(int i, double value);
  Stmt& bind(int i, const std::optional<std::string>& text);
  Stmt& bind(int i, const std::optional<double>& value);
  Stmt& bind_null(int i);
  /// Binds column `col` of `row` (a stepped statement) unchanged: type and value.
  Stmt& bind_column(int i, const Stmt& row, int col) {
    sqlite3_bind_value(stmt_, i, sqlite3_column_value(row.stmt_, col));
    return *this;
  }

  /// true: a row is ready; false: done.
  Expected<bool> step();
  /// Steps to the end (a write), ignoring rows.
  Status run();
  void reset();

  int64_t col_int(int i) const { return sqlite3_column_int64(stmt_, i); }
  double col_double(int i) const { return sqlite3_column_double(stmt_, i); }
  bool col_null(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }
  std::string col_text(int i) const;
  std::optional<std::string> col_opt_text(int i) const;
  std::optional<double> col_opt_double(int i) const;
  sqlite3_stmt* raw() const { return stmt_; }

 private:
  Db* db_;
  sqlite3_stmt* stmt_;
};

class Db {
 public:
  static Expected<Db> open(const std::string& path, const StoreOptions& options);
  /// A private in-memory copy of the database at `path` (read through a read-only connection,
  /// then closed): what a read-only open of an older schema migrates, leaving the file as it is.
  /// Errors still name `path`.
  static Expected<Db> open_memory_copy(const std::string& path, const StoreOptions& options);
  Db(Db&& o) noexcept : db_(o.db_), hook_(std::move(o.hook_)), path_(std::move(o.path_)) {
    o.db_ = nullptr;
  }
  Db& operator=(Db&&) = delete;
  Db(const Db&) = delete;
  ~Db() { sqlite3_close_v2(db_); }

  Expected<Stmt> prepare(std::string_view sql);
  /// Runs a script of statements (faultable as one write, or as a commit for "COMMIT").
  Status exec(std::string_view sql);
  /// Runs without consulting the fault hook: ROLLBACK, pragmas that only read.
  Status exec_unfaulted(std::string_view sql);
  /// One integer from a query ("PRAGMA user_version", "SELECT count(*) ...").
  Expected<int64_t> scalar(std::string_view sql);

  /// The injected result code for `op`, 0 when no fault fires.
  int fault(SqlOp op, std::string_view sql) const { return hook_ ? hook_(op, sql) : 0; }
  Error error(int rc, std::string_view what) const;
  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }

 private:
  Db(sqlite3* db, FaultHook hook, std::string path)
      : db_(db), hook_(std::move(hook)), path_(std::move(path)) {}
  sqlite3* db_;
  FaultHook hook_;
  std::string path_;
};

/// BEGIN IMMEDIATE on construction (check ok()), ROLLBACK on destruction unless committed.
class Transaction {
 public:
  explicit Transaction(Db& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  const Status& begun() const { return begun_; }
  Status commit();

 private:
  Db& db_;
  Status begun_;
  bool open_ = false;
};

}  // namespace kcv::audit::sql
