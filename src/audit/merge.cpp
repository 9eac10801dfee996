// File: src/audit/merge.cpp
// `kcv merge`: unions shard stores into one, in a single transaction on the destination (all
// sources or nothing). Sources are read through their own read-only connections rather than
// ATTACH, so there is no limit on their number. Run ids are renumbered (offset by the
// destination's largest) and each copied run's `origin` names its source. Conflict rules:
// a kernel final in both with different statuses, or a verdict key (kernel, gate, profile) with
// different verdicts, is an error naming the key; the same verdict with other fields differing
// (a non-deterministic kernel's worst ratio, or a finding one side recorded and the other, an
// older kcv, did not) keeps the destination's row and is counted. A source of an older schema is
// opened read-only and so read from its migrated in-memory copy (schema.cpp): every column
// exists, with the defaults of rows recorded before it.
// Integrity: every source must verify under its own key (a failing one stops the merge); the
// kernels of dest that hold anything of an unsigned kernel (a source without a key, or rows
// recorded before schema 3) stay unsigned, every other final kernel of dest is signed again under
// dest's key, and the manifest is rebuilt, all inside the merge's one transaction.
#include <fmt/format.h>

#include <set>

#include "audit/integrity.hpp"
#include "audit/store_impl.hpp"

namespace kcv::audit {
namespace {

constexpr int kKernelColumnCount = 20;
constexpr int kKernelRunIdColumn = 12;
constexpr const char* kKernelColumns =
    "kernel_id, corpus, level, problem_id, problem_name, language, op_class, "
    "determinism_declared, original_verdict, status, message, replica_verdict, run_id, "
    "attempts, queued_at, started_at, finished_at, facts, row_hash, seen_hash";

struct Source {
  sql::Db& dest;
  sql::Db& src;
  const std::string& path;
  int64_t run_offset = 0;
  MergeSummary& summary;
  bool src_signed = false;         // the source has its key (so its signed rows verified)
  std::set<std::string>& tainted;  // dest kernels holding rows of an unsigned kernel
};

Error conflict(const Source& s, std::string message) {
  return make_error(ErrorCode::kInvalidArgument, "merge conflict: " + std::move(message), s.path);
}

void bind_run_id(sql::Stmt& ins, int i, const sql::Stmt& row, int col, int64_t offset) {
  if (row.col_null(col))
    ins.bind_null(i);
  else
    ins.bind(i, row.col_int(col) + offset);
}

Status copy_runs(Source& s) {
  Expected<int64_t> max_run = s.dest.scalar("SELECT coalesce(max(run_id), 0) FROM runs");
  if (!max_run) return max_run.error();
  s.run_offset = *max_run;
  Expected<sql::Stmt> q = s.src.prepare(
      "SELECT run_id, kcv_version, generator_version, seed, profiles, command_line, shard, "
      "started_at, finished_at, coalesce(origin, '') FROM runs ORDER BY run_id");
  Expected<sql::Stmt> ins = s.dest.prepare(
      "INSERT INTO runs(run_id, kcv_version, generator_version, seed, profiles, command_line, "
      "shard, started_at, finished_at, origin) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)");
  if (!q) return q.error();
  if (!ins) return ins.error();
  for (;;) {
    Expected<bool> row = q->step();
    if (!row) return row.error();
    if (!*row) return {};
    ins->reset();
    ins->bind(1, q->col_int(0) + s.run_offset);
    for (int c = 1; c <= 8; ++c) ins->bind_column(c + 1, *q, c);
    const std::string origin = q->col_text(9);
    ins->bind(10, origin.empty() ? fmt::format("{} run {}", s.path, q->col_int(0)) : origin);
    if (Status st = ins->run(); !st) return st;
    ++s.summary.runs;
  }
}

// The destination's status of a kernel, or "" when absent.
Expected<std::string> dest_status(sql::Db& dest, const std::string& kernel_id) {
  Expected<sql::Stmt> q = dest.prepare("SELECT status FROM kernels WHERE kernel_id=?1");
  if (!q) return q.error();
  q->bind(1, kernel_id);
  Expected<bool> row = q->step();
  if (!row) return row.error();
  return *row ? q->col_text(0) : std::string();
}

bool final_name(const std::string& status) {
  Expected<KernelStatus> s = parse_status(status);
  return s && is_final(*s);
}

Status put_kernel(Source& s, const sql::Stmt& row) {
  Expected<sql::Stmt> ins = s.dest.prepare(fmt::format(
      "INSERT OR REPLACE INTO kernels({}) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,"
      "?15,?16,?17,?18,?19,?20)",
      kKernelColumns));
  if (!ins) return ins.error();
  for (int c = 0; c < kKernelColumnCount; ++c) {
    if (c == kKernelRunIdColumn)
      bind_run_id(*ins, c + 1, row, c, s.run_offset);
    else
      ins->bind_column(c + 1, row, c);
  }
  return ins->run();
}

Status copy_kernels(Source& s) {
  Expected<sql::Stmt> q =
      s.src.prepare(fmt::format("SELECT {}, mac<>'' FROM kernels", kKernelColumns));
  if (!q) return q.error();
  for (;;) {
    Expected<bool> row = q->step();
    if (!row) return row.error();
    if (!*row) return {};
    const std::string id = q->col_text(0);
    const std::string src_status = q->col_text(9);
    Expected<std::string> have = dest_status(s.dest, id);
    if (!have) return have.error();
    const bool src_final = final_name(src_status);
    if (have->empty() || (src_final && !final_name(*have))) {
      if (Status st = put_kernel(s, *q); !st) return st;
      s.summary.kernels_added += src_final ? 1 : 0;
      if (src_final && !(s.src_signed && q->col_int(kKernelColumnCount) != 0)) s.tainted.insert(id);
    } else if (src_final && *have != src_status) {
      return conflict(s, fmt::format("kernel {}: status '{}' in the destination, '{}' here", id,
                                     *have, src_status));
    }
  }
}

// Columns of a source verdict row (copy_verdicts' SELECT), by name.
namespace col {
enum VerdictColumn : int {
  kKernelId,
  kGate,
  kProfile,
  kVerdict,
  kReason,
  kWorstRatio,
  kBitsLost,
  kEvidence,
  kProbeToken,
  kRunId,
  kFinding,
  kScope,
  kCount,
  kKernelSigned = kCount  // not copied: whether the source kernel carries a MAC
};
}  // namespace col

Status merge_verdict(Source& s, const sql::Stmt& v) {
  Expected<sql::Stmt> q = s.dest.prepare(
      "SELECT verdict, reason IS ?4 AND worst_ratio IS ?5 AND bits_lost IS ?6 AND evidence IS ?7 "
      "AND probe_token IS ?8 AND finding IS ?9 AND scope IS ?10 "
      "FROM verdicts WHERE kernel_id=?1 AND gate=?2 AND profile=?3");
  if (!q) return q.error();
  int i = 1;
  for (int c : {col::kKernelId, col::kGate, col::kProfile, col::kReason, col::kWorstRatio,
                col::kBitsLost, col::kEvidence, col::kProbeToken, col::kFinding, col::kScope})
    q->bind_column(i++, v, c);
  Expected<bool> row = q->step();
  if (!row) return row.error();
  if (*row) {
    if (q->col_text(0) != v.col_text(col::kVerdict)) {
      return conflict(
          s, fmt::format("verdict ({}, {}, {}): '{}' in the destination, '{}' here",
                         v.col_text(col::kKernelId), v.col_text(col::kGate),
                         v.col_text(col::kProfile), q->col_text(0), v.col_text(col::kVerdict)));
    }
    ++(q->col_int(1) != 0 ? s.summary.verdicts_identical : s.summary.evidence_differs);
    return {};
  }
  Expected<sql::Stmt> ins = s.dest.prepare(
      "INSERT INTO verdicts(kernel_id, gate, profile, verdict, reason, worst_ratio, bits_lost, "
      "evidence, probe_token, run_id, finding, scope) "
      "VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)");
  if (!ins) return ins.error();
  for (int c = 0; c < col::kCount; ++c) {
    if (c == col::kRunId)
      bind_run_id(*ins, c + 1, v, c, s.run_offset);
    else
      ins->bind_column(c + 1, v, c);
  }
  if (Status st = ins->run(); !st) return st;
  ++s.summary.verdicts_added;
  if (!(s.src_signed && v.col_int(col::kKernelSigned) != 0))
    s.tainted.insert(v.col_text(col::kKernelId));
  return {};
}

Status copy_verdicts(Source& s) {
  Expected<sql::Stmt> q = s.src.prepare(fmt::format(
      "SELECT v.kernel_id, v.gate, v.profile, v.verdict, v.reason, v.worst_ratio, v.bits_lost, "
      "v.evidence, v.probe_token, v.run_id, v.finding, v.scope, k.mac<>'' "
      "FROM verdicts v JOIN kernels k USING(kernel_id) "
      "WHERE k.status IN {} ORDER BY v.kernel_id, v.gate, v.profile",
      final_status_list()));
  if (!q) return q.error();
  for (;;) {
    Expected<bool> row = q->step();
    if (!row) return row.error();
    if (!*row) return {};
    if (Status st = merge_verdict(s, *q); !st) return st;
  }
}

Status copy_failing_probes(Source& s) {
  Expected<sql::Stmt> q = s.src.prepare(
      "SELECT kernel_id, gate, profile, probe_token, run_id, recorded_at FROM failing_probes");
  Expected<sql::Stmt> ins = s.dest.prepare(
      "INSERT OR IGNORE INTO failing_probes(kernel_id, gate, profile, probe_token, run_id, "
      "recorded_at) VALUES(?1,?2,?3,?4,?5,?6)");
  if (!q) return q.error();
  if (!ins) return ins.error();
  for (;;) {
    Expected<bool> row = q->step();
    if (!row) return row.error();
    if (!*row) return {};
    ins->reset();
    for (int c = 0; c < 4; ++c) ins->bind_column(c + 1, *q, c);
    bind_run_id(*ins, 5, *q, 4, s.run_offset);
    ins->bind_column(6, *q, 5);
    if (Status st = ins->run(); !st) return st;
  }
}

Status record_provenance(Source& s, const MergeSummary& before) {
  Expected<sql::Stmt> ins = s.dest.prepare(fmt::format(
      "INSERT INTO merges(source, run_offset, kernels_added, verdicts_added, merged_at) "
      "VALUES(?1,?2,?3,?4,{})",
      kNowSql));
  if (!ins) return ins.error();
  ins->bind(1, s.path).bind(2, s.run_offset);
  ins->bind(3, s.summary.kernels_added - before.kernels_added);
  ins->bind(4, s.summary.verdicts_added - before.verdicts_added);
  return ins->run();
}

Status merge_one(sql::Db& dest, const std::string& path, MergeSummary& summary,
                 const StoreOptions& options, std::set<std::string>& tainted) {
  StoreOptions read_only;
  read_only.read_only = true;
  read_only.key_dir = options.key_dir;
  Expected<Store> src = Store::open(path, read_only);  // checks it is a store of our schema
  if (!src) return src.error();
  Expected<Integrity> integrity = src->verify();
  if (!integrity) return integrity.error();
  if (integrity->state == Integrity::State::kFailed) {
    std::string why;
    for (const std::string& p : integrity->problems) why += (why.empty() ? "" : "; ") + p;
    return make_error(ErrorCode::kInvalidArgument,
                      "merge refused: the source fails verification: " + why, path);
  }
  Source s{dest, src->impl().db, path, 0, summary, src->impl().signer.has_value(), tainted};
  const MergeSummary before = summary;
  for (Status (*step)(Source&) : {copy_runs, copy_kernels, copy_verdicts, copy_failing_probes}) {
    if (Status st = step(s); !st) return st;
  }
  return record_provenance(s, before);
}

// The final kernels of `db` (with an extra condition), into `out`.
Status final_ids(sql::Db& db, std::string_view extra, std::set<std::string>& out) {
  Expected<sql::Stmt> q = db.prepare(fmt::format(
      "SELECT kernel_id FROM kernels WHERE status IN {} {}", final_status_list(), extra));
  if (!q) return q.error();
  for (;;) {
    Expected<bool> row = q->step();
    if (!row) return row.error();
    if (!*row) return {};
    out.insert(q->col_text(0));
  }
}

}  // namespace

Expected<MergeSummary> merge(const std::string& dest, const std::vector<std::string>& sources,
                             const StoreOptions& options) {
  Expected<Store> out = Store::open(dest, options);
  if (!out) return out.error();
  sql::Db& db = out->impl().db;
  Expected<const Signer*> signer = writer_signer(out->impl());
  if (!signer) return signer.error();
  MergeSummary summary;
  sql::Transaction tx(db);
  if (!tx.begun()) return tx.begun().error();
  std::set<std::string> tainted;
  if (Status s = final_ids(db, "AND mac=''", tainted); !s) return s.error();
  for (const std::string& path : sources) {
    if (Status s = merge_one(db, path, summary, options, tainted); !s) return s.error();
  }
  std::set<std::string> finals;
  if (Status s = final_ids(db, "", finals); !s) return s.error();
  for (const std::string& id : finals) {
    if (tainted.contains(id)) {
      if (Status s = unsign_kernel(db, id); !s) return s.error();
      ++summary.unsigned_kernels;
    } else if (Expected<std::string> m = sign_kernel(db, **signer, id); !m) {
      return m.error();
    }
  }
  if (Status s = manifest_rebuild(db, **signer); !s) return s.error();
  if (Status s = check_schema_before_commit(db); !s) return s.error();
  if (Status s = tx.commit(); !s) return s.error();
  return summary;
}

}  // namespace kcv::audit
