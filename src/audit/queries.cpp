// File: src/audit/queries.cpp
// The headline numbers of the audit report (issue 3 item 5), computed in SQL over the store.
// A kernel is "evaluated" under a profile when a gate failed under it, or when its battery
// finished (status ok) with at least one pass or fail verdict: a kernel that timed out or
// crashed part-way with passes only was not checked in full, so it is in no denominator (its
// per-gate verdicts still count in the per-gate rates). Rates count kernels, not rows. The tolerance-free floor counts a kernel when a gate with
// GateDef::tolerance_free fails, ORD-02 only where the kernel declared determinism (without
// the declaration, run-to-run differences are allowed and ORD-02 is no floor).
#include <fmt/format.h>

#include "audit/store_impl.hpp"
#include "kcv/gate.hpp"

namespace kcv::audit {
namespace {

std::string sql_list(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += fmt::format("{}'{}'", out.empty() ? "(" : ",", s);
  return out + ")";
}

// One row per (profile, kernel) evaluated, with its any-fail and TF-fail flags.
std::string per_kernel_cte() {
  return fmt::format(
      "WITH per AS (SELECT v.profile AS profile, k.op_class AS op_class, "
      "max(v.verdict='fail') AS any_fail, "
      "max(v.verdict='fail' AND v.gate IN {} AND (v.gate<>'ORD-02' OR k.determinism_declared)) "
      "AS tf_fail FROM verdicts v JOIN kernels k USING(kernel_id) "
      "WHERE v.verdict IN ('pass','fail') GROUP BY v.profile, v.kernel_id "
      "HAVING max(v.verdict='fail') OR max(k.status='ok')) ",
      sql_list(tolerance_free_gates()));
}

template <typename Fn>
Status for_each_row(sql::Db& db, const std::string& sql, Fn&& fn) {
  Expected<sql::Stmt> q = db.prepare(sql);
  if (!q) return q.error();
  for (;;) {
    Expected<bool> row = q->step();
    if (!row) return row.error();
    if (!*row) return {};
    fn(*q);
  }
}

Status fill_statuses(sql::Db& db, Headline& h) {
  if (Status s = for_each_row(db, "SELECT status, count(*) FROM kernels GROUP BY status ORDER BY status",
                              [&](const sql::Stmt& q) {
                                h.statuses.push_back({q.col_text(0), q.col_int(1)});
                              });
      !s)
    return s;
  return for_each_row(db,
                      "SELECT corpus, status, count(*) FROM kernels GROUP BY corpus, status "
                      "ORDER BY corpus, status",
                      [&](const sql::Stmt& q) {
                        h.corpus_statuses.push_back({q.col_text(0), q.col_text(1), q.col_int(2)});
                      });
}

Status fill_profiles(sql::Db& db, Headline& h) {
  return for_each_row(
      db,
      per_kernel_cte() +
          "SELECT profile, sum(any_fail), sum(tf_fail), count(*) FROM per "
          "GROUP BY profile ORDER BY profile",
      [&](const sql::Stmt& q) {
        h.profiles.push_back(
            {q.col_text(0), {q.col_int(1), q.col_int(3)}, {q.col_int(2), q.col_int(3)}});
      });
}

Status fill_classes(sql::Db& db, Headline& h) {
  return for_each_row(db,
                      per_kernel_cte() +
                          "SELECT profile, op_class, sum(any_fail), sum(tf_fail), count(*) "
                          "FROM per GROUP BY profile, op_class ORDER BY profile, op_class",
                      [&](const sql::Stmt& q) {
                        h.classes.push_back({q.col_text(0),
                                             q.col_text(1),
                                             {q.col_int(2), q.col_int(4)},
                                             {q.col_int(3), q.col_int(4)}});
                      });
}

Status fill_gates(sql::Db& db, Headline& h) {
  return for_each_row(db,
                      "SELECT profile, gate, sum(verdict='fail'), sum(verdict IN ('pass','fail')), "
                      "sum(verdict='error'), sum(verdict='not_applicable') FROM verdicts "
                      "GROUP BY profile, gate ORDER BY profile, gate",
                      [&](const sql::Stmt& q) {
                        h.gates.push_back({q.col_text(0),
                                           q.col_text(1),
                                           {q.col_int(2), q.col_int(3)},
                                           q.col_int(4),
                                           q.col_int(5)});
                      });
}

Status fill_reduced(sql::Db& db, Headline& h) {
  return for_each_row(db,
                      "SELECT count(DISTINCT kernel_id) FROM verdicts "
                      "WHERE json_extract(evidence, '$.battery_shape') IS NOT NULL",
                      [&](const sql::Stmt& q) { h.reduced_shape = q.col_int(0); });
}

}  // namespace

std::vector<std::string> tolerance_free_gates() {
  std::vector<std::string> out;
  for (GateId id : kAllGates) {
    if (gate_def(id).tolerance_free) out.emplace_back(gate_code(id));
  }
  return out;
}

Expected<Headline> headline(const Store& store) {
  sql::Db& db = store.impl().db;
  Headline h;
  for (Status (*fill)(sql::Db&, Headline&) :
       {fill_statuses, fill_profiles, fill_gates, fill_classes, fill_reduced}) {
    if (Status s = fill(db, h); !s) return s.error();
  }
  return h;
}

}  // namespace kcv::audit
