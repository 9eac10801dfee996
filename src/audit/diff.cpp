// File: src/audit/diff.cpp
// The verdict diff of two stores (`kcv diff`): the kernels final in both, compared by status,
// the replica's verdict and each (gate, profile)'s verdict, finding and scope. What a repeated
// audit must reproduce; worst ratios, evidence, reasons and messages may differ between runs
// (pids, measured values) and are shown, never compared.
#include <fmt/format.h>

#include <map>
#include <set>
#include <utility>

#include "kcv/audit.hpp"

namespace kcv::audit {
namespace {

using Key = std::pair<std::string, std::string>;  // (gate, profile)

std::string verdict_text(const VerdictRecord& v) {
  if (v.verdict != "fail") return v.verdict;
  return fmt::format("fail {} {}", finding_name(v.finding), scope_name(v.scope));
}

Expected<std::map<Key, VerdictRecord>> verdicts_by_key(const Store& store, const std::string& id) {
  Expected<std::vector<VerdictRecord>> rows = store.verdicts(id);
  if (!rows) return rows.error();
  std::map<Key, VerdictRecord> out;
  for (VerdictRecord& v : *rows) {
    Key key{v.gate, v.profile};
    out.emplace(std::move(key), std::move(v));
  }
  return out;
}

std::string replica_text(const std::optional<std::string>& v) { return v ? *v : "-"; }

// The kind of a (gate, profile) difference; nullptr: the store has no verdict for the key.
DifferenceKind verdict_change(const VerdictRecord* a, const VerdictRecord* b) {
  if (a == nullptr || b == nullptr) return DifferenceKind::kOneSideOnly;
  const auto either = [&](std::string_view v) { return a->verdict == v || b->verdict == v; };
  if (either("error")) return DifferenceKind::kError;
  if (either("not_applicable")) return DifferenceKind::kNotApplicable;
  if (a->verdict == "fail" && b->verdict == "fail") return DifferenceKind::kFailChanged;
  return DifferenceKind::kPassFail;
}

}  // namespace

std::string_view difference_kind_name(DifferenceKind k) {
  switch (k) {
    case DifferenceKind::kStatus:
      return "status";
    case DifferenceKind::kReplica:
      return "replica";
    case DifferenceKind::kPassFail:
      return "pass/fail flip";
    case DifferenceKind::kFailChanged:
      return "fail with another finding or scope";
    case DifferenceKind::kError:
      return "an error in one store";
    case DifferenceKind::kNotApplicable:
      return "not applicable in one store";
    case DifferenceKind::kOneSideOnly:
      return "a verdict in one store only";
  }
  return "?";
}

Expected<StoreDiff> diff_verdicts(const Store& a, const Store& b) {
  Expected<std::vector<KernelRow>> ka = a.kernels();
  if (!ka) return ka.error();
  Expected<std::vector<KernelRow>> kb = b.kernels();
  if (!kb) return kb.error();
  std::map<std::string, const KernelRow*> final_b;
  for (const KernelRow& k : *kb)
    if (is_final(k.status)) final_b.emplace(k.info.kernel_id, &k);

  StoreDiff d;
  std::set<std::string> seen_in_a;
  for (const KernelRow& ra : *ka) {
    if (!is_final(ra.status)) continue;
    const std::string& id = ra.info.kernel_id;
    seen_in_a.insert(id);
    const auto it = final_b.find(id);
    if (it == final_b.end()) {
      d.final_in_a_only.push_back(id);
      continue;
    }
    const KernelRow& rb = *it->second;
    ++d.final_in_both;
    if (ra.status != rb.status)
      d.differences.push_back({id, "status", "", "", std::string(status_name(ra.status)),
                               std::string(status_name(rb.status)), ra.message, rb.message});
    if (ra.replica_verdict != rb.replica_verdict)
      d.differences.push_back({id, "replica", "", "", replica_text(ra.replica_verdict),
                               replica_text(rb.replica_verdict), "", "", DifferenceKind::kReplica});
    Expected<std::map<Key, VerdictRecord>> va = verdicts_by_key(a, id);
    if (!va) return va.error();
    Expected<std::map<Key, VerdictRecord>> vb = verdicts_by_key(b, id);
    if (!vb) return vb.error();
    std::set<Key> keys;
    for (const auto& [key, v] : *va) keys.insert(key);
    for (const auto& [key, v] : *vb) keys.insert(key);
    for (const Key& key : keys) {
      ++d.verdicts_compared;
      const auto ia = va->find(key);
      const auto ib = vb->find(key);
      const std::string ta = ia == va->end() ? "-" : verdict_text(ia->second);
      const std::string tb = ib == vb->end() ? "-" : verdict_text(ib->second);
      if (ta == tb) continue;
      const VerdictRecord* a_v = ia == va->end() ? nullptr : &ia->second;
      const VerdictRecord* b_v = ib == vb->end() ? nullptr : &ib->second;
      d.differences.push_back({id, "verdict", key.first, key.second, ta, tb,
                               a_v == nullptr ? "" : a_v->reason, b_v == nullptr ? "" : b_v->reason,
                               verdict_change(a_v, b_v)});
    }
  }
  for (const auto& [id, row] : final_b)
    if (!seen_in_a.contains(id)) d.final_in_b_only.push_back(id);
  return d;
}

}  // namespace kcv::audit
