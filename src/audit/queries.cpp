// File: src/audit/queries.cpp
// The headline numbers of the audit report, computed from typed findings (judged.hpp), never
// from which gate failed: per profile the any-violation rate and the tolerance-free floor over
// three populations (all judged kernels, those the replica accepted, those the original harness
// accepted), the robustness table (the same two rates among replica-accepted kernels under each
// cumulative contract choice), per-finding counts and per-class rates. Counting is done in C++
// over one read of the judged kernels, so every number follows the one membership rule; the
// status, per-gate and reduced-shape counts are plain SQL aggregates. A rate that hangs on a fail
// without a finding is absent, never recomputed from gates: an old store says "unavailable".
#include <fmt/format.h>

#include <map>
#include <span>

#include "audit/judged.hpp"
#include "audit/store_impl.hpp"
#include "kcv/gate.hpp"

namespace kcv::audit {
namespace {

enum class Population { kJudged, kReplicaAccepted, kOriginalAccepted };

bool in_population(const JudgedKernel& k, Population p) {
  switch (p) {
    case Population::kJudged:
      return true;
    case Population::kReplicaAccepted:
      return k.replica_accepted;
    case Population::kOriginalAccepted:
      return k.original_accepted;
  }
  return false;
}

/// A rate that becomes absent as soon as one member is unknown.
class RateAcc {
 public:
  void add(Membership m) {
    ++rate_.total;
    rate_.hits += m == Membership::kIn ? 1 : 0;
    unknown_ |= m == Membership::kUnknown;
  }
  std::optional<Rate> get() const { return unknown_ ? std::nullopt : std::optional(rate_); }

 private:
  Rate rate_;
  bool unknown_ = false;
};

using Kernels = std::span<const JudgedKernel>;

std::optional<Rate> rate_of(Kernels ks, Population p, Measure m, ContractChoice c) {
  RateAcc acc;
  for (const JudgedKernel& k : ks) {
    if (in_population(k, p)) acc.add(membership(k, m, c));
  }
  return acc.get();
}

ViolationRates rates_of(Kernels ks, Population p) {
  // Under the choice as judged every fail counts, so the any-violation rate is always known.
  return {rate_of(ks, p, Measure::kAnyViolation, ContractChoice::kAsJudged).value_or(Rate{}),
          rate_of(ks, p, Measure::kFloor, ContractChoice::kAsJudged)};
}

ProfileHeadline profile_headline(const std::string& profile, Kernels ks) {
  ProfileHeadline h{profile, rates_of(ks, Population::kJudged),
                    rates_of(ks, Population::kReplicaAccepted),
                    rates_of(ks, Population::kOriginalAccepted)};
  for (const JudgedKernel& k : ks) {
    h.untyped_kernels +=
        membership(k, Measure::kFloor, ContractChoice::kAsJudged) == Membership::kUnknown;
  }
  return h;
}

void add_robustness(Headline& h, const std::string& profile, Kernels ks) {
  for (ContractChoice c : kContractChoices) {
    h.robustness.push_back({profile, c,
                            rate_of(ks, Population::kReplicaAccepted, Measure::kAnyViolation, c),
                            rate_of(ks, Population::kReplicaAccepted, Measure::kFloor, c)});
  }
}

bool has_fail_of(const JudgedKernel& k, const std::optional<Finding>& finding) {
  for (const JudgedFail& f : k.fails) {
    if (f.finding == finding) return true;
  }
  return false;
}

// Every typed finding gets a row (a zero says a kind of defect was never found); the untyped
// row only when some fail names no finding.
void add_findings(Headline& h, const std::string& profile, Kernels ks) {
  std::vector<std::optional<Finding>> keys;
  for (Finding f : kAllFindings) {
    if (f != Finding::kNone) keys.emplace_back(f);
  }
  keys.emplace_back(std::nullopt);
  for (const std::optional<Finding>& key : keys) {
    FindingCount c{profile, key};
    for (const JudgedKernel& k : ks) {
      const int64_t hit = has_fail_of(k, key) ? 1 : 0;
      ++c.judged.total;
      c.judged.hits += hit;
      c.replica_accepted.total += k.replica_accepted ? 1 : 0;
      c.replica_accepted.hits += k.replica_accepted ? hit : 0;
    }
    if (key || c.judged.hits > 0) h.findings.push_back(std::move(c));
  }
}

void add_classes(Headline& h, const std::string& profile, Kernels ks) {
  std::map<std::string, std::vector<JudgedKernel>> by_class;
  for (const JudgedKernel& k : ks) by_class[k.op_class].push_back(k);
  for (const auto& [op_class, members] : by_class)
    h.classes.push_back({profile, op_class, rates_of(members, Population::kJudged)});
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

constexpr const char* kReplicaAccepted = "coalesce(k.replica_verdict, '')='accepted'";
constexpr const char* kOriginalAccepted = "coalesce(k.original_verdict, '')='accepted'";

Status fill_statuses(sql::Db& db, Headline& h) {
  if (Status s = for_each_row(
          db,
          fmt::format("SELECT status, count(*), sum({}), sum({}) FROM kernels k "
                      "GROUP BY status ORDER BY status",
                      kReplicaAccepted, kOriginalAccepted),
          [&](const sql::Stmt& q) {
            h.statuses.push_back({q.col_text(0), q.col_int(1), q.col_int(2), q.col_int(3)});
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

// Per profile: ok kernels with verdicts under it but none pass or fail.
Expected<std::map<std::string, int64_t>> unjudged_ok(sql::Db& db) {
  std::map<std::string, int64_t> out;
  Status s = for_each_row(
      db,
      "SELECT profile, count(*) FROM (SELECT v.profile AS profile FROM verdicts v "
      "JOIN kernels k USING(kernel_id) WHERE k.status='ok' GROUP BY v.profile, v.kernel_id "
      "HAVING max(v.verdict IN ('pass','fail'))=0) GROUP BY profile",
      [&](const sql::Stmt& q) { out[q.col_text(0)] = q.col_int(1); });
  if (!s) return s.error();
  return out;
}

Status fill_profiles(sql::Db& db, Headline& h) {
  Expected<std::vector<JudgedKernel>> judged = judged_kernels(db);
  if (!judged) return judged.error();
  Expected<std::map<std::string, int64_t>> unjudged = unjudged_ok(db);
  if (!unjudged) return unjudged.error();
  std::map<std::string, Kernels> by_profile;  // judged is ordered by profile: spans of it
  for (auto it = judged->begin(); it != judged->end();) {
    auto end = it;
    while (end != judged->end() && end->profile == it->profile) ++end;
    by_profile[it->profile] = Kernels(&*it, static_cast<std::size_t>(end - it));
    it = end;
  }
  for (const auto& [profile, count] : *unjudged) by_profile.try_emplace(profile);
  for (const auto& [profile, ks] : by_profile) {
    h.profiles.push_back(profile_headline(profile, ks));
    if (auto it = unjudged->find(profile); it != unjudged->end())
      h.profiles.back().unjudged_ok = it->second;
    add_robustness(h, profile, ks);
    add_findings(h, profile, ks);
    add_classes(h, profile, ks);
  }
  return {};
}

Status fill_gates(sql::Db& db, Headline& h) {
  return for_each_row(
      db,
      fmt::format("SELECT v.profile, v.gate, sum(v.verdict='fail'), "
                  "sum(v.verdict IN ('pass','fail')), sum(v.verdict='fail' AND {0}), "
                  "sum(v.verdict IN ('pass','fail') AND {0}), sum(v.verdict='error'), "
                  "sum(v.verdict='not_applicable') FROM verdicts v JOIN kernels k "
                  "USING(kernel_id) WHERE k.status='ok' GROUP BY v.profile, v.gate "
                  "ORDER BY v.profile, v.gate",
                  kReplicaAccepted),
      [&](const sql::Stmt& q) {
        h.gates.push_back({q.col_text(0),
                           q.col_text(1),
                           {q.col_int(2), q.col_int(3)},
                           {q.col_int(4), q.col_int(5)},
                           q.col_int(6),
                           q.col_int(7)});
      });
}

Status fill_reduced(sql::Db& db, Headline& h) {
  return for_each_row(db,
                      "SELECT count(DISTINCT kernel_id) FROM verdicts "
                      "WHERE json_extract(evidence, '$.battery_shape') IS NOT NULL",
                      [&](const sql::Stmt& q) { h.reduced_shape = q.col_int(0); });
}

Status fill_not_run_here(sql::Db& db, Headline& h) {
  return for_each_row(db,
                      "SELECT count(DISTINCT kernel_id) FROM verdicts "
                      "WHERE json_extract(evidence, '$.probes_not_run') > 0",
                      [&](const sql::Stmt& q) { h.not_run_here = q.col_int(0); });
}

Status fill_stale(sql::Db& db, Headline& h) {
  return for_each_row(db,
                      fmt::format("SELECT count(*) FROM kernels WHERE status IN {} AND "
                                  "seen_hash<>'' AND seen_hash<>row_hash",
                                  final_status_list()),
                      [&](const sql::Stmt& q) { h.stale = q.col_int(0); });
}

}  // namespace

std::string_view contract_choice_name(ContractChoice c) {
  switch (c) {
    case ContractChoice::kAsJudged:
      return "as_judged";
    case ContractChoice::kNoDeterminism:
      return "without_determinism";
    case ContractChoice::kNoShape:
      return "without_shape";
    case ContractChoice::kNoLayout:
      return "without_layout";
  }
  return "as_judged";
}

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
       {fill_statuses, fill_profiles, fill_gates, fill_reduced, fill_not_run_here, fill_stale}) {
    if (Status s = fill(db, h); !s) return s.error();
  }
  return h;
}

}  // namespace kcv::audit
