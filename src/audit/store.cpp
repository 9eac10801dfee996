// File: src/audit/store.cpp
// The store's write side. The one rule: record() writes a kernel's verdicts (with their findings
// and scopes), its failing probes, its final status and the facts the run learned in ONE
// immediate transaction, replacing whatever verdicts an earlier, interrupted attempt may have
// left (none, by the same rule). Every other write is a single statement or a single
// transaction too, so a fault at any point leaves the store as it was before the call. PRAGMA
// synchronous=FULL: a committed kernel survives power loss as well as kill -9, at one fsync per
// kernel (noise next to running a kernel).
// Integrity (integrity.hpp): opened for writing, a store must verify, and gets its id and key
// when it has none; every write that makes or unmakes a final kernel signs it and updates the
// manifest in the same transaction, and no transaction commits while the schema holds anything
// that is not kcv's.
#include <fmt/format.h>

#include "audit/integrity.hpp"
#include "audit/store_impl.hpp"

namespace kcv::audit {
namespace {

std::string joined(const std::vector<std::string>& parts, int64_t more = 0) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "; ") + p;
  if (more > 0) out += fmt::format("; and {} more", more);
  return out;
}

Error refused(const sql::Db& db, const std::string& why) {
  return make_error(ErrorCode::kInvalidArgument,
                    fmt::format("refused: {} (the store was changed outside kcv; `kcv report "
                                "--untrusted` shows what it holds)",
                                why),
                    "audit store " + db.path());
}

// A store opened for writing without an id gets one, with a fresh key file and manifest.
Status init_key(Store::Impl& impl, const StoreOptions& options) {
  sql::Transaction tx(impl.db);
  if (!tx.begun()) return tx.begun();
  Expected<std::optional<std::string>> id = meta_value(impl.db, "store_id");  // another writer?
  if (!id) return id.error();
  Signer signer;
  if (*id) {
    signer.store_id = **id;
    impl.key_file = mac::key_path(options.key_dir, signer.store_id);
    Expected<mac::Key> key = mac::read_key_file(impl.key_file);
    if (!key) return key.error();
    signer.key = *key;
  } else {
    Expected<std::string> fresh = mac::random_hex(16);
    if (!fresh) return fresh.error();
    signer.store_id = *fresh;
    impl.key_file = mac::key_path(options.key_dir, signer.store_id);
    Expected<mac::Key> key = mac::create_key_file(impl.key_file);
    if (!key) return key.error();
    signer.key = *key;
    if (Status s = set_meta(impl.db, "store_id", signer.store_id); !s) return s;
    if (Status s = set_meta(impl.db, "key_check", key_check(signer)); !s) return s;
    if (Status s = manifest_init(impl.db, signer); !s) return s;
  }
  if (Status s = tx.commit(); !s) return s;
  impl.store_id = signer.store_id;
  impl.signer = signer;
  return {};
}

Status attach_key_for_writing(Store::Impl& impl, const StoreOptions& options) {
  Expected<std::vector<std::string>> schema = schema_problems(impl.db);
  if (!schema) return schema.error();
  if (!schema->empty()) return refused(impl.db, "schema: " + joined(*schema));
  Expected<std::optional<std::string>> id = meta_value(impl.db, "store_id");
  if (!id) return id.error();
  if (!*id) return init_key(impl, options);
  impl.store_id = **id;
  impl.key_file = mac::key_path(options.key_dir, impl.store_id);
  Expected<mac::Key> key = mac::read_key_file(impl.key_file);
  if (!key) {
    return make_error(key.error().code,
                      fmt::format("the store's key {}: {} (without it no row can be added or "
                                  "verified; KCV_KEY_DIR or --key-dir names the directory)",
                                  impl.key_file, key.error().message),
                      "audit store " + impl.db.path());
  }
  impl.signer = Signer{*key, impl.store_id};
  Expected<Integrity> integrity =
      verify_store(impl.db, impl.signer, impl.store_id, impl.key_file, "");
  if (!integrity) return integrity.error();
  if (integrity->state == Integrity::State::kFailed)
    return refused(impl.db, joined(integrity->problems, integrity->more_problems));
  return {};
}

// Read-only: the key when there is one; a missing or wrong key is for verify() to report.
Status attach_key_read_only(Store::Impl& impl, const StoreOptions& options) {
  Expected<std::optional<std::string>> id = meta_value(impl.db, "store_id");
  if (!id) return id.error();
  if (!*id) return {};
  impl.store_id = **id;
  impl.key_file = mac::key_path(options.key_dir, impl.store_id);
  Expected<mac::Key> key = mac::read_key_file(impl.key_file);
  if (key)
    impl.signer = Signer{*key, impl.store_id};
  else
    impl.key_problem = "the store's key: " + key.error().to_string();
  return {};
}

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

// The facts an outcome learned (op class, declared determinism, the reference's facts, the
// judged row's hash) replace the kernel row's only when set: an outcome that knows nothing of
// them leaves the enqueued ones. A fresh judgement is never stale.
Status update_status(sql::Db& db, const KernelOutcome& outcome, int64_t run_id) {
  Expected<sql::Stmt> up = db.prepare(fmt::format(
      "UPDATE kernels SET status=?2, message=?3, replica_verdict=?4, run_id=?5, finished_at={}, "
      "op_class=CASE WHEN ?6='' THEN op_class ELSE ?6 END, "
      "determinism_declared=coalesce(?7, determinism_declared), "
      "facts=CASE WHEN ?8='' THEN facts ELSE ?8 END, "
      "row_hash=CASE WHEN ?9='' THEN row_hash ELSE ?9 END, seen_hash='' WHERE kernel_id=?1",
      kNowSql));
  if (!up) return up.error();
  up->bind(1, outcome.kernel_id).bind(2, status_name(outcome.status)).bind(3, outcome.message);
  up->bind(4, outcome.replica_verdict).bind(5, run_id).bind(6, outcome.op_class);
  if (outcome.determinism_declared)
    up->bind(7, int64_t{*outcome.determinism_declared ? 1 : 0});
  else
    up->bind_null(7);
  up->bind(8, outcome.facts_json).bind(9, outcome.row_hash);
  if (Status s = up->run(); !s) {
    return make_error(s.error().code, fmt::format("kernel row: {}", s.error().message),
                      outcome.kernel_id);
  }
  if (sqlite3_changes(db.handle()) == 1) return {};
  return make_error(ErrorCode::kNotFound, "kernel_id: not in the store (enqueue it first)",
                    outcome.kernel_id);
}

Status run_one(sql::Db& db, const std::string& sql, std::string_view kernel_id) {
  Expected<sql::Stmt> q = db.prepare(sql);
  if (!q) return q.error();
  q->bind(1, kernel_id);
  return q->run();
}

}  // namespace

Expected<const Signer*> writer_signer(Store::Impl& impl) {
  if (impl.signer) return &*impl.signer;
  return make_error(ErrorCode::kInternal, "a write to a store opened without its key",
                    "audit store " + impl.db.path());
}

Status check_schema_before_commit(sql::Db& db) {
  Expected<std::vector<std::string>> schema = schema_problems(db);
  if (!schema) return schema.error();
  if (schema->empty()) return {};
  return refused(db, "schema: " + joined(*schema));
}

std::string_view integrity_state_name(Integrity::State s) {
  switch (s) {
    case Integrity::State::kVerified:
      return "verified";
    case Integrity::State::kUnsigned:
      return "unsigned";
    case Integrity::State::kFailed:
      return "failed";
  }
  return "failed";
}

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

Expected<Store> Store::open(const std::string& path, StoreOptions options) {
  Expected<sql::Db> db = open_current_schema(path, options);
  if (!db) return db.error();
  auto impl = std::make_unique<Impl>(Impl{std::move(db).value(), std::nullopt, "", "", ""});
  const Status keyed = options.read_only ? attach_key_read_only(*impl, options)
                                         : attach_key_for_writing(*impl, options);
  if (!keyed) return keyed.error();
  return Store(std::move(impl));
}

Expected<std::vector<std::string>> Store::schema_problems() const {
  return audit::schema_problems(impl_->db);
}

Expected<Integrity> Store::verify() const {
  return verify_store(impl_->db, impl_->signer, impl_->store_id, impl_->key_file,
                      impl_->key_problem);
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
  sql::Transaction tx(impl_->db);
  if (!tx.begun()) return tx.begun().error();
  if (Status s = ins->run(); !s) return s.error();
  const int64_t run_id = sqlite3_last_insert_rowid(impl_->db.handle());
  if (Status s = check_schema_before_commit(impl_->db); !s) return s.error();
  if (Status s = tx.commit(); !s) return s.error();
  return run_id;
}

Status Store::finish_run(int64_t run_id) {
  sql::Transaction tx(impl_->db);
  if (!tx.begun()) return tx.begun();
  Expected<sql::Stmt> up =
      impl_->db.prepare(fmt::format("UPDATE runs SET finished_at={} WHERE run_id=?1", kNowSql));
  if (!up) return up.error();
  up->bind(1, run_id);
  if (Status s = up->run(); !s) return s;
  if (Status s = check_schema_before_commit(impl_->db); !s) return s;
  return tx.commit();
}

Status Store::enqueue(const std::vector<KernelInfo>& kernels) {
  sql::Transaction tx(impl_->db);
  if (!tx.begun()) return tx.begun();
  Expected<sql::Stmt> ins = impl_->db.prepare(fmt::format(
      "INSERT OR IGNORE INTO kernels(kernel_id, corpus, level, problem_id, problem_name, "
      "language, op_class, determinism_declared, original_verdict, status, queued_at, row_hash) "
      "VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,'pending',{},?10)",
      kNowSql));
  if (!ins) return ins.error();
  for (const KernelInfo& k : kernels) {
    ins->reset();
    ins->bind(1, k.kernel_id).bind(2, k.corpus).bind(3, int64_t{k.level});
    ins->bind(4, int64_t{k.problem_id}).bind(5, k.problem_name).bind(6, k.language);
    ins->bind(7, k.op_class).bind(8, int64_t{k.determinism_declared ? 1 : 0});
    ins->bind(9, k.original_verdict).bind(10, k.row_hash);
    if (Status s = ins->run(); !s) return s;
  }
  if (Status s = check_schema_before_commit(impl_->db); !s) return s;
  return tx.commit();
}

Status Store::record_malformed(const RowError& error, std::string_view corpus, int64_t run_id) {
  KernelInfo info;
  info.kernel_id = malformed_kernel_id(error);
  info.corpus = std::string(corpus);
  if (Status s = enqueue({info}); !s) return s;
  KernelOutcome outcome{info.kernel_id,
                        KernelStatus::kMalformed,
                        fmt::format("line {}: {}", error.line, error.message),
                        std::nullopt,
                        {}};
  outcome.row_hash = error.row_hash;
  return record(outcome, run_id);
}

// attempts counts runs: a kernel this run already started (postponed, or retried alone) keeps
// its count, so only a run that dies with it running leaves an unfinished attempt.
Status Store::mark_running(std::string_view kernel_id, int64_t run_id) {
  sql::Transaction tx(impl_->db);
  if (!tx.begun()) return tx.begun();
  Expected<sql::Stmt> up = impl_->db.prepare(fmt::format(
      "UPDATE kernels SET attempts=attempts+CASE WHEN status='running' AND run_id IS ?2 "
      "THEN 0 ELSE 1 END, status='running', run_id=?2, started_at={} "
      "WHERE kernel_id=?1 AND status IN ('pending','running')",
      kNowSql));
  if (!up) return up.error();
  up->bind(1, kernel_id).bind(2, run_id);
  if (Status s = up->run(); !s) return s;
  if (Status s = check_schema_before_commit(impl_->db); !s) return s;
  return tx.commit();
}

Status Store::release_running(int64_t run_id, std::string_view kernel_id) {
  sql::Transaction tx(impl_->db);
  if (!tx.begun()) return tx.begun();
  Expected<sql::Stmt> up = impl_->db.prepare(
      "UPDATE kernels SET status='pending', attempts=max(attempts-1, 0) "
      "WHERE status='running' AND run_id>=?1 AND (?2='' OR kernel_id=?2)");
  if (!up) return up.error();
  up->bind(1, run_id).bind(2, kernel_id);
  if (Status s = up->run(); !s) return s;
  if (Status s = check_schema_before_commit(impl_->db); !s) return s;
  return tx.commit();
}

Status Store::record(const KernelOutcome& outcome, int64_t run_id) {
  if (Status s = check_final(outcome); !s) return s;
  Expected<const Signer*> signer = writer_signer(*impl_);
  if (!signer) return signer.error();
  sql::Db& db = impl_->db;
  sql::Transaction tx(db);
  if (!tx.begun()) return tx.begun();
  Expected<SignedState> old = signed_state(db, outcome.kernel_id);
  if (!old) return old.error();
  Expected<sql::Stmt> del = db.prepare("DELETE FROM verdicts WHERE kernel_id=?1");
  if (!del) return del.error();
  del->bind(1, outcome.kernel_id);
  if (Status s = del->run(); !s) return s;
  if (Status s = update_status(db, outcome, run_id); !s) return s;
  if (Status s = insert_verdicts(db, outcome, run_id); !s) return s;
  Expected<std::string> kmac = sign_kernel(db, **signer, outcome.kernel_id);
  if (!kmac) return kmac.error();
  if (Status s = manifest_replace(db, **signer, outcome.kernel_id, *old, *kmac); !s) return s;
  if (Status s = check_schema_before_commit(db); !s) return s;
  return tx.commit();
}

Status Store::reset(std::string_view kernel_id, std::string_view row_hash) {
  Expected<const Signer*> signer = writer_signer(*impl_);
  if (!signer) return signer.error();
  sql::Db& db = impl_->db;
  sql::Transaction tx(db);
  if (!tx.begun()) return tx.begun();
  Expected<SignedState> old = signed_state(db, kernel_id);
  if (!old) return old.error();
  // Its failing probes stay: they are run first when it is judged again.
  if (Status s = run_one(db, "DELETE FROM verdicts WHERE kernel_id=?1", kernel_id); !s) return s;
  Expected<sql::Stmt> up = db.prepare(
      "UPDATE kernels SET status='pending', message='', replica_verdict=NULL, attempts=0, "
      "row_hash=?2, seen_hash='', mac='' WHERE kernel_id=?1");
  if (!up) return up.error();
  up->bind(1, kernel_id).bind(2, row_hash);
  if (Status s = up->run(); !s) return s;
  if (sqlite3_changes(db.handle()) != 1)
    return make_error(ErrorCode::kNotFound, "kernel_id: not in the store", std::string(kernel_id));
  if (Status s = manifest_replace(db, **signer, kernel_id, *old, ""); !s) return s;
  if (Status s = check_schema_before_commit(db); !s) return s;
  return tx.commit();
}

Status Store::mark_stale(std::string_view kernel_id, std::string_view seen_hash) {
  Expected<const Signer*> signer = writer_signer(*impl_);
  if (!signer) return signer.error();
  sql::Db& db = impl_->db;
  sql::Transaction tx(db);
  if (!tx.begun()) return tx.begun();
  Expected<SignedState> old = signed_state(db, kernel_id);
  if (!old) return old.error();
  if (!old->final_status)
    return make_error(ErrorCode::kInvalidArgument, "mark_stale: the kernel is not final",
                      std::string(kernel_id));
  if (!old->mac.empty()) {  // signed again below: what is signed must be what was signed
    Expected<std::vector<std::string>> bad = check_kernel(db, **signer, kernel_id);
    if (!bad) return bad.error();
    if (!bad->empty()) return refused(db, joined(*bad));
  }
  Expected<sql::Stmt> up = db.prepare("UPDATE kernels SET seen_hash=?2 WHERE kernel_id=?1");
  if (!up) return up.error();
  up->bind(1, kernel_id).bind(2, seen_hash);
  if (Status s = up->run(); !s) return s;
  if (!old->mac.empty()) {
    Expected<std::string> kmac = sign_kernel(db, **signer, kernel_id);
    if (!kmac) return kmac.error();
    if (Status s = manifest_replace(db, **signer, kernel_id, *old, *kmac); !s) return s;
  }
  if (Status s = check_schema_before_commit(db); !s) return s;
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

std::string default_key_dir() { return mac::default_key_dir(); }

}  // namespace kcv::audit
