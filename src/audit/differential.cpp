// File: src/audit/differential.cpp
// The 2x2 differential (kcv against the allclose replica, or against each corpus's stored
// original verdict) and the seeded, stratified hand-audit sample. kcv "rejects" a judged kernel
// when any verdict fails under the chosen profile (the headline's any violation, so the
// replica 2x2's kcv-rejects cells are exactly the replica-accepted headline's hits); an original
// `compile_error` counts as a rejection. Kernels kcv did not judge (status not ok, or no pass or
// fail verdict under the profile: a timeout's earlier fail included, it is a status, not a
// verdict on the whole kernel), or the other judge gave no verdict on, are counted as excluded.
// The sample ranks each stratum by FNV-1a of "<seed>:<kernel id>": stable across machines and
// independent of insertion order, so a reviewer can regenerate it.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "audit/store_impl.hpp"

namespace kcv::audit {
namespace {

struct KernelOutcomeRow {
  std::string kernel_id;
  std::string corpus;
  std::string status;
  std::optional<std::string> other;
  bool judged = false;
  bool rejected = false;
};

Expected<std::vector<KernelOutcomeRow>> outcomes(const Store& store, std::string_view profile,
                                                 std::string_view other_column) {
  Expected<sql::Stmt> q = store.impl().db.prepare(
      fmt::format("SELECT k.kernel_id, k.corpus, k.status, k.{}, "
                  "EXISTS(SELECT 1 FROM verdicts v WHERE v.kernel_id=k.kernel_id AND v.profile=?1 "
                  "AND v.verdict IN ('pass','fail')), "
                  "EXISTS(SELECT 1 FROM verdicts v WHERE v.kernel_id=k.kernel_id AND v.profile=?1 "
                  "AND v.verdict='fail') FROM kernels k ORDER BY k.kernel_id",
                  other_column));
  if (!q) return q.error();
  q->bind(1, profile);
  std::vector<KernelOutcomeRow> out;
  for (;;) {
    Expected<bool> row = q->step();
    if (!row) return row.error();
    if (!*row) return out;
    KernelOutcomeRow k{q->col_text(0), q->col_text(1), q->col_text(2), q->col_opt_text(3)};
    k.judged = k.status == "ok" && q->col_int(4) != 0;
    k.rejected = k.judged && q->col_int(5) != 0;
    out.push_back(std::move(k));
  }
}

void tally(Differential& d, const KernelOutcomeRow& k) {
  if (!k.judged || !k.other) {
    ++d.excluded;
    return;
  }
  const bool other_accepts = *k.other == "accepted";
  if (other_accepts)
    ++(k.rejected ? d.kcv_rejects_other_accepts : d.both_accept);
  else
    ++(k.rejected ? d.both_reject : d.kcv_accepts_other_rejects);
}

}  // namespace

Expected<std::vector<Differential>> differential(const Store& store, std::string_view profile,
                                                 std::string_view against) {
  if (against != "replica" && against != "original") {
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("against: '{}' is neither 'replica' nor 'original'", against));
  }
  Expected<std::vector<KernelOutcomeRow>> rows =
      outcomes(store, profile, against == "replica" ? "replica_verdict" : "original_verdict");
  if (!rows) return rows.error();
  std::map<std::string, Differential> by_corpus;
  Differential all{std::string(against), ""};
  for (const KernelOutcomeRow& k : *rows) {
    auto [it, fresh] =
        by_corpus.try_emplace(k.corpus, Differential{std::string(against), k.corpus});
    tally(it->second, k);
    tally(all, k);
  }
  std::vector<Differential> out{all};
  for (auto& [corpus, d] : by_corpus) out.push_back(d);
  return out;
}

Expected<std::vector<SampleItem>> hand_audit_sample(const Store& store, std::string_view profile,
                                                    int per_stratum, uint64_t seed) {
  Expected<std::vector<KernelOutcomeRow>> rows = outcomes(store, profile, "replica_verdict");
  if (!rows) return rows.error();
  std::map<std::string, std::vector<std::pair<uint64_t, std::string>>> strata;
  for (const KernelOutcomeRow& k : *rows) {
    const std::string outcome = k.status != "ok" ? k.status
                                : !k.judged      ? "unjudged"
                                : k.rejected     ? "violation"
                                                 : "clean";
    strata[k.corpus + "/" + outcome].emplace_back(fnv1a64(fmt::format("{}:{}", seed, k.kernel_id)),
                                                  k.kernel_id);
  }
  std::vector<SampleItem> out;
  for (auto& [stratum, members] : strata) {
    std::sort(members.begin(), members.end());
    const size_t take = std::min(members.size(), static_cast<size_t>(std::max(per_stratum, 0)));
    for (size_t i = 0; i < take; ++i) out.push_back({members[i].second, stratum});
  }
  return out;
}

}  // namespace kcv::audit
