// File: src/audit/store.cpp
// The store's write side. The one rule: record() writes a kernel's verdicts (with their findings
// and scopes), its failing probes, its final status and the facts the run learned in ONE
// immediate transaction, replacing whatever verdicts an earlier, interrupted attempt may have
// left (none, by the same rule). Every other write is a single statement or a single
// transaction too, so a fault at any point leaves the store as it was before the call. PRAGMA
// synchronous=FULL: a committed kernel survives power loss as well as kill -9, at one fsync per
// kernel (noise next to running a kernel).
#include <fmt/format.h>

#include "audit/store_impl.hpp"

namespace kcv::audit {
namespace {

Status check_final(const KernelOutcome& outcome) {
  if (is_final(outcome.status)) return {};
  return make_error(ErrorCode::kInvalidArgument,
                    fmt::format("status: '{}' is not a final status", status_name(outcome.status)),
                    outcome.kernel_id);
}

// The scope column describes the failing probe, so only a fail has one ('' otherwise).
std::string_view stored_scope(const VerdictRecord& v) {
  return v.verdict == "fail" ? scope_name(v.scope) : std::string_view();
}

Status insert_verdicts(sql::Db& db, const KernelOutcome& outcome, int64_t run_id) {
  Expected<sql::Stmt> ins = db.prepare(
      "INSERT INTO verdicts(kernel_id, gate, profile, verdict, reason, worst_ratio, bits_lost, "
      "evidence, probe_token, run_id, finding, scope) "
      "VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)");
  if (!ins) return ins.error();
  Expected<sql::Stmt> probe = db.prepare(fmt::format(
      "INSERT OR IGNORE INTO failing_probes(kernel_id, gate, profile, probe_token, run_id, "
      "recorded_at) VALUES(?1,?2,?3,?4,?5,{})",
      kNowSql));
  if (!probe) return probe.error();
  for (const VerdictRecord& v : outcome.verdicts) {
    ins->reset();
    ins->bind(1, outcome.kernel_id).bind(2, v.gate).bind(3, v.profile).bind(4, v.verdict);
    ins->bind(5, v.reason).bind(6, v.worst_ratio).bind(7, v.bits_lost).bind(8, v.evidence_json);
    ins->bind(9, v.probe_token).bind(10, run_id).bind(11, finding_name(v.finding));
    ins->bind(12, stored_scope(v));
    if (Status s = ins->run(); !s) {
      return make_error(s.error().code,
                        fmt::format("verdict {}/{}: {}", v.gate, v.profile, s.error().message),
                        outcome.kernel_id);
    }
    if (v.verdict != "fail" || v.probe_token.empty()) continue;
    probe->reset();
    probe->bind(1, outcome.kernel_id).bind(2, v.gate).bind(3, v.profile).bind(4, v.probe_token);
    probe->bind(5, run_id);
    if (Status s = probe->run(); !s) return s;
  }
  return {};
}

// The facts an outcome learned (op class, declared determinism, the reference's facts) replace
// the kernel row's only when set: an outcome that knows nothing of them leaves the enqueued ones.
Status update_status(sql::Db& db, const KernelOutcome& outcome, int64_t run_id) {
  Expected<sql::Stmt> up = db.prepare(fmt::format(
      "UPDATE kernels SET status=?2, message=?3, replica_verdict=?4, run_id=?5, finished_at={}, "
      "op_class=CASE WHEN ?6='' THEN op_class ELSE ?6 END, "
      "determinism_declared=coalesce(?7, determinism_declared), "
      "facts=CASE WHEN ?8='' THEN facts ELSE ?8 END WHERE kernel_id=?1",
      kNowSql));
  if (!up) return up.error();
  up->bind(1, outcome.kernel_id).bind(2, status_name(outcome.status)).bind(3, outcome.message);
  up->bind(4, outcome.replica_verdict).bind(5, run_id).bind(6, outcome.op_class);
  if (outcome.determinism_declared)
    up->bind(7, int64_t{*outcome.determinism_declared ? 1 : 0});
  else
    up->bind_null(7);
  up->bind(8, outcome.facts_json);
  if (Status s = up->run(); !s) {
    return make_error(s.error().code, fmt::format("kernel row: {}", s.error().message),
                      outcome.kernel_id);
  }
  if (sqlite3_changes(db.handle()) == 1) return {};
  return make_error(ErrorCode::kNotFound, "kernel_id: not in the store (enqueue it first)",
                    outcome.kernel_id);
}

}  // namespace

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

Expected<Store> Store::open(const std::string& path, StoreOptions options) {
  Expected<sql::Db> db = open_current_schema(path, options);
  if (!db) return db.error();
  return Store(std::make_unique<Impl>(Impl{std::move(db).value()}));
}

Expected<int64_t> Store::begin_run(const RunInfo& run) {
  std::string profiles;
  for (const std::string& p : run.profiles) {
    if (!profiles.empty()) profiles += ',';
    profiles += p;
  }
  Expected<sql::Stmt> ins = impl_->db.prepare(fmt::format(
      "INSERT INTO runs(kcv_version, generator_version, seed, profiles, command_line, shard, "
      "started_at) VALUES(?1,?2,?3,?4,?5,?6,{})",
      kNowSql));
  if (!ins) return ins.error();
  ins->bind(1, run.kcv_version).bind(2, run.generator_version);
  ins->bind(3, std::to_string(run.seed)).bind(4, profiles).bind(5, run.command_line);
  ins->bind(6, run.shard);
  if (Status s = ins->run(); !s) return s.error();
  return sqlite3_last_insert_rowid(impl_->db.handle());
}

Status Store::finish_run(int64_t run_id) {
  Expected<sql::Stmt> up =
      impl_->db.prepare(fmt::format("UPDATE runs SET finished_at={} WHERE run_id=?1", kNowSql));
  if (!up) return up.error();
  up->bind(1, run_id);
  return up->run();
}

Status Store::enqueue(const std::vector<KernelInfo>& kernels) {
  sql::Transaction tx(impl_->db);
  if (!tx.begun()) return tx.begun();
  Expected<sql::Stmt> ins = impl_->db.prepare(fmt::format(
      "INSERT OR IGNORE INTO kernels(kernel_id, corpus, level, problem_id, problem_name, "
      "language, op_class, determinism_declared, original_verdict, status, queued_at) "
      "VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,'pending',{})",
      kNowSql));
  if (!ins) return ins.error();
  for (const KernelInfo& k : kernels) {
    ins->reset();
    ins->bind(1, k.kernel_id).bind(2, k.corpus).bind(3, int64_t{k.level});
    ins->bind(4, int64_t{k.problem_id}).bind(5, k.problem_name).bind(6, k.language);
    ins->bind(7, k.op_class).bind(8, int64_t{k.determinism_declared ? 1 : 0});
    ins->bind(9, k.original_verdict);
    if (Status s = ins->run(); !s) return s;
  }
  return tx.commit();
}

Status Store::record_malformed(const RowError& error, std::string_view corpus, int64_t run_id) {
  KernelInfo info;
  info.kernel_id = error.id.empty() ? shard_key(error) : error.id;
  info.corpus = std::string(corpus);
  if (Status s = enqueue({info}); !s) return s;
  KernelOutcome outcome{info.kernel_id,
                        KernelStatus::kMalformed,
                        fmt::format("line {}: {}", error.line, error.message),
                        std::nullopt,
                        {}};
  return record(outcome, run_id);
}

Status Store::mark_running(std::string_view kernel_id, int64_t run_id) {
  Expected<sql::Stmt> up = impl_->db.prepare(fmt::format(
      "UPDATE kernels SET status='running', attempts=attempts+1, run_id=?2, started_at={} "
      "WHERE kernel_id=?1 AND status IN ('pending','running')",
      kNowSql));
  if (!up) return up.error();
  up->bind(1, kernel_id).bind(2, run_id);
  return up->run();
}

Status Store::record(const KernelOutcome& outcome, int64_t run_id) {
  if (Status s = check_final(outcome); !s) return s;
  sql::Db& db = impl_->db;
  sql::Transaction tx(db);
  if (!tx.begun()) return tx.begun();
  Expected<sql::Stmt> del = db.prepare("DELETE FROM verdicts WHERE kernel_id=?1");
  if (!del) return del.error();
  del->bind(1, outcome.kernel_id);
  if (Status s = del->run(); !s) return s;
  if (Status s = update_status(db, outcome, run_id); !s) return s;
  if (Status s = insert_verdicts(db, outcome, run_id); !s) return s;
  return tx.commit();
}

Expected<std::string> Store::integrity_check() const {
  Expected<sql::Stmt> q = impl_->db.prepare("PRAGMA integrity_check");
  if (!q) return q.error();
  std::string out;
  for (;;) {
    Expected<bool> row = q->step();
    if (!row) return row.error();
    if (!*row) return out;
    if (!out.empty()) out += '\n';
    out += q->col_text(0);
  }
}

}  // namespace kcv::audit
