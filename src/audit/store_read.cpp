// File: src/audit/store_read.cpp
// The store's read side: the to-do list for resume, kernels, verdicts and failing probes.
// Reads are never faulted and need no transaction of their own (WAL gives each statement a
// consistent snapshot). A verdict's finding and scope read back as the enums; the '' of a store
// recorded before findings were typed reads as kNone / kReference (the report queries read the
// column itself and tell the two apart).
#include <fmt/format.h>

#include "audit/store_impl.hpp"

namespace kcv::audit {
namespace {

constexpr const char* kKernelColumns =
    "kernel_id, corpus, level, problem_id, problem_name, language, op_class, "
    "determinism_declared, original_verdict, status, message, replica_verdict, run_id, attempts, "
    "facts, row_hash, seen_hash, mac<>''";

Expected<KernelRow> kernel_from(const sql::Stmt& q) {
  KernelRow k;
  k.info.kernel_id = q.col_text(0);
  k.info.corpus = q.col_text(1);
  k.info.level = static_cast<int>(q.col_int(2));
  k.info.problem_id = static_cast<int>(q.col_int(3));
  k.info.problem_name = q.col_text(4);
  k.info.language = q.col_text(5);
  k.info.op_class = q.col_text(6);
  k.info.determinism_declared = q.col_int(7) != 0;
  k.info.original_verdict = q.col_opt_text(8);
  Expected<KernelStatus> status = parse_status(q.col_text(9));
  if (!status) return status.error();
  k.status = *status;
  k.message = q.col_text(10);
  k.replica_verdict = q.col_opt_text(11);
  if (!q.col_null(12)) k.run_id = q.col_int(12);
  k.attempts = static_cast<int>(q.col_int(13));
  k.facts_json = q.col_text(14);
  k.row_hash = q.col_text(15);
  k.seen_hash = q.col_text(16);
  k.is_signed = q.col_int(17) != 0;
  return k;
}

Expected<std::vector<KernelRow>> query_kernels(sql::Db& db, std::string_view where,
                                               std::string_view id) {
  Expected<sql::Stmt> q = db.prepare(
      fmt::format("SELECT {} FROM kernels {} ORDER BY kernel_id", kKernelColumns, where));
  if (!q) return q.error();
  if (!id.empty()) q->bind(1, id);
  std::vector<KernelRow> out;
  for (;;) {
    Expected<bool> row = q->step();
    if (!row) return row.error();
    if (!*row) return out;
    Expected<KernelRow> k = kernel_from(*q);
    if (!k) return k.error();
    out.push_back(std::move(k).value());
  }
}

/// The first column of every row of a query without parameters.
Expected<std::vector<std::string>> query_texts(sql::Db& db, const char* sql) {
  Expected<sql::Stmt> q = db.prepare(sql);
  if (!q) return q.error();
  std::vector<std::string> out;
  for (;;) {
    Expected<bool> row = q->step();
    if (!row) return row.error();
    if (!*row) return out;
    out.push_back(q->col_text(0));
  }
}

VerdictRecord verdict_from(const sql::Stmt& q) {
  VerdictRecord v{q.col_text(0),       q.col_text(1),       q.col_text(2), q.col_text(3),
                  q.col_opt_double(4), q.col_opt_double(5), q.col_text(6), q.col_text(7)};
  if (Expected<Finding> f = parse_finding(q.col_text(8))) v.finding = *f;
  if (Expected<ProbeScope> s = parse_scope(q.col_text(9))) v.scope = *s;
  return v;
}

}  // namespace

Expected<std::vector<std::string>> Store::todo() const {
  return query_texts(impl_->db,
                     "SELECT k.kernel_id FROM kernels k WHERE k.status IN ('pending','running') "
                     "ORDER BY EXISTS(SELECT 1 FROM failing_probes f WHERE "
                     "f.kernel_id=k.kernel_id) DESC, k.kernel_id");
}

Expected<std::vector<std::string>> Store::verdict_generators() const {
  return query_texts(impl_->db,
                     "SELECT DISTINCT r.generator_version FROM runs r "
                     "WHERE EXISTS(SELECT 1 FROM verdicts v WHERE v.run_id=r.run_id) ORDER BY 1");
}

Expected<std::optional<KernelRow>> Store::kernel(std::string_view kernel_id) const {
  Expected<std::vector<KernelRow>> rows = query_kernels(impl_->db, "WHERE kernel_id=?1", kernel_id);
  if (!rows) return rows.error();
  if (rows->empty()) return std::optional<KernelRow>{};
  return std::optional<KernelRow>{std::move(rows->front())};
}

Expected<std::vector<KernelRow>> Store::kernels() const { return query_kernels(impl_->db, "", ""); }

Expected<std::vector<VerdictRecord>> Store::verdicts(std::string_view kernel_id) const {
  Expected<sql::Stmt> q = impl_->db.prepare(
      "SELECT gate, profile, verdict, reason, worst_ratio, bits_lost, evidence, probe_token, "
      "finding, scope FROM verdicts WHERE kernel_id=?1 ORDER BY gate, profile");
  if (!q) return q.error();
  q->bind(1, kernel_id);
  std::vector<VerdictRecord> out;
  for (;;) {
    Expected<bool> row = q->step();
    if (!row) return row.error();
    if (!*row) return out;
    out.push_back(verdict_from(*q));
  }
}

Expected<std::vector<FailingProbe>> Store::failing_probes(std::string_view kernel_id) const {
  Expected<sql::Stmt> q = impl_->db.prepare(
      "SELECT gate, profile, probe_token FROM failing_probes WHERE kernel_id=?1 "
      "ORDER BY recorded_at DESC, gate, profile");
  if (!q) return q.error();
  q->bind(1, kernel_id);
  std::vector<FailingProbe> out;
  for (;;) {
    Expected<bool> row = q->step();
    if (!row) return row.error();
    if (!*row) return out;
    out.push_back({std::string(kernel_id), q->col_text(0), q->col_text(1), q->col_text(2)});
  }
}

}  // namespace kcv::audit
