// File: src/audit/judged.cpp
// Reads the judged kernels (one query, grouped here) and decides membership. Each contract
// choice and the floor are conditions a fail must meet to count; they are combined in
// three-valued logic, so a condition the store cannot decide (a finding or scope it lacks) is
// "unknown" rather than guessed, and a fail that some known condition already excludes (a
// shape-scoped fail once shape generality is left out) is excluded whatever it found.
#include "audit/judged.hpp"

#include <array>

namespace kcv::audit {
namespace {

using Tri = std::optional<bool>;  // a condition: true, false, or unknown (nullopt)

Tri finding_is_not(const JudgedFail& f, Finding x) {
  return f.finding ? Tri(*f.finding != x) : std::nullopt;
}

Tri scope_is_not(const JudgedFail& f, ProbeScope x) {
  return f.scope ? Tri(*f.scope != x) : std::nullopt;
}

// Nondeterminism is a defect only where the kernel declared determinism.
Tri in_floor(const JudgedFail& f, bool determinism_declared) {
  if (!f.finding) return std::nullopt;
  return is_tolerance_free(*f.finding) &&
         (*f.finding != Finding::kNondeterministic || determinism_declared);
}

Tri fail_counts(const JudgedFail& f, Measure m, ContractChoice c, bool determinism_declared) {
  const std::array<Tri, 4> conditions = {
      c >= ContractChoice::kNoDeterminism ? finding_is_not(f, Finding::kNondeterministic) : true,
      c >= ContractChoice::kNoShape ? scope_is_not(f, ProbeScope::kShape) : true,
      c >= ContractChoice::kNoLayout ? scope_is_not(f, ProbeScope::kLayout) : true,
      m == Measure::kFloor ? in_floor(f, determinism_declared) : true,
  };
  bool unknown = false;
  for (const Tri& t : conditions) {
    if (t && !*t) return false;
    unknown |= !t;
  }
  return unknown ? Tri() : Tri(true);
}

std::optional<Finding> stored_finding(const std::string& text) {
  Expected<Finding> f = parse_finding(text);
  if (!f || *f == Finding::kNone) return std::nullopt;
  return *f;
}

std::optional<ProbeScope> stored_scope(const std::string& text) {
  Expected<ProbeScope> s = parse_scope(text);
  return s ? std::optional<ProbeScope>(*s) : std::nullopt;
}

}  // namespace

Membership membership(const JudgedKernel& k, Measure m, ContractChoice c) {
  bool unknown = false;
  for (const JudgedFail& f : k.fails) {
    const Tri t = fail_counts(f, m, c, k.determinism_declared);
    if (t && *t) return Membership::kIn;
    unknown |= !t;
  }
  return unknown ? Membership::kUnknown : Membership::kOut;
}

Expected<std::vector<JudgedKernel>> judged_kernels(sql::Db& db) {
  Expected<sql::Stmt> q = db.prepare(
      "SELECT v.profile, k.kernel_id, k.op_class, k.determinism_declared, "
      "coalesce(k.replica_verdict, '')='accepted', coalesce(k.original_verdict, '')='accepted', "
      "v.verdict, v.gate, v.finding, v.scope FROM verdicts v JOIN kernels k USING(kernel_id) "
      "WHERE k.status='ok' AND v.verdict IN ('pass','fail') "
      "ORDER BY v.profile, k.kernel_id, v.gate");
  if (!q) return q.error();
  std::vector<JudgedKernel> out;
  for (;;) {
    Expected<bool> row = q->step();
    if (!row) return row.error();
    if (!*row) return out;
    const std::string profile = q->col_text(0), id = q->col_text(1);
    if (out.empty() || out.back().profile != profile || out.back().kernel_id != id) {
      out.push_back({profile,
                     id,
                     q->col_text(2),
                     q->col_int(3) != 0,
                     q->col_int(4) != 0,
                     q->col_int(5) != 0,
                     {}});
    }
    if (q->col_text(6) != "fail") continue;
    out.back().fails.push_back(
        {q->col_text(7), stored_finding(q->col_text(8)), stored_scope(q->col_text(9))});
  }
}

}  // namespace kcv::audit
