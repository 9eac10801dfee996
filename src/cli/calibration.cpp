// File: src/cli/calibration.cpp
// The headline numbers of `kcv calibrate`. A red-team kernel counts as caught only when its
// intended gate fails (an error or a failure of some other gate does not count: the point is
// that each gate catches what it claims to). "kcv rejects" counts red-team kernels with any
// failed or errored gate, the number a user of `kcv verify` would see.
#include "cli/calibration.hpp"

#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "kcv/report.hpp"

namespace kcv::cli {

using Json = nlohmann::ordered_json;  // fields in the documented order

std::optional<Verdict> KernelOutcome::intended_verdict() const {
  if (!intended || !report) return std::nullopt;
  for (const GateResult& g : report->results) {
    if (g.gate == *intended) return g.verdict;
  }
  return std::nullopt;
}

std::vector<GateId> KernelOutcome::other_failures() const {
  std::vector<GateId> gates;
  if (!report) return gates;
  for (const GateResult& g : report->results) {
    const bool bad = g.verdict == Verdict::kFail || g.verdict == Verdict::kError;
    if (bad && (!intended || g.gate != *intended)) gates.push_back(g.gate);
  }
  return gates;
}

bool KernelOutcome::as_expected() const {
  if (!report) return false;
  if (red_team()) return intended_verdict() == Verdict::kFail;
  return report->passed();
}

namespace {

std::string gate_list(const std::vector<GateId>& gates) {
  std::vector<std::string_view> codes;
  for (GateId g : gates) codes.push_back(gate_code(g));
  return codes.empty() ? "-" : fmt::format("{}", fmt::join(codes, ","));
}

std::string kcv_cell(const KernelOutcome& k) {
  if (!k.report) return "ERROR";
  if (!k.red_team()) return k.report->passed() ? "pass" : "FAIL";
  const std::optional<Verdict> v = k.intended_verdict();
  if (!v) return "not run";
  if (*v == Verdict::kFail) return "caught";
  return *v == Verdict::kPass ? "ESCAPED (pass)" : *v == Verdict::kError ? "ESCAPED (error)" : "ESCAPED (n/a)";
}

struct GateTally {
  int kernels = 0, replica_accepted = 0, caught = 0;
  void add(const KernelOutcome& k) {
    ++kernels;
    replica_accepted += k.replica_accepted;
    caught += k.as_expected();
  }
};

struct Tally {
  std::map<GateId, GateTally> per_gate;
  GateTally total;  // over the red team
  int rejected = 0;  // red-team kernels with any failed or errored gate
  int controls = 0, control_failures = 0;
};

Tally tally(const std::vector<KernelOutcome>& kernels) {
  Tally t;
  for (const KernelOutcome& k : kernels) {
    if (!k.red_team()) {
      ++t.controls;
      t.control_failures += !k.as_expected();
      continue;
    }
    t.per_gate[*k.intended].add(k);
    t.total.add(k);
    t.rejected += k.report && !k.report->passed();
  }
  return t;
}

}  // namespace

std::string outcome_line(const KernelOutcome& k, std::size_t index, std::size_t total,
                         std::size_t name_width) {
  const std::string intended = k.intended ? std::string(gate_code(*k.intended)) : "control";
  std::string line = fmt::format("[{:>{}}/{}] {:<{}}  {:<8} replica: {:<8} kcv: {:<15} {:>6.1f}s  other failing: {}",
                                 index + 1, std::to_string(total).size(), total, k.name, name_width, intended,
                                 k.replica_accepted ? "accepts" : "rejects", kcv_cell(k), k.seconds,
                                 gate_list(k.other_failures()));
  if (!k.error.empty()) line += "\n    error: " + k.error;
  return line;
}

std::string render_calibration_summary(const std::vector<KernelOutcome>& kernels) {
  const Tally t = tally(kernels);
  std::string out = fmt::format("\nrigor gap in miniature: allclose replica accepts {} of {} broken kernels; kcv rejects {} of {}\n\n",
                                t.total.replica_accepted, t.total.kernels, t.rejected, t.total.kernels);
  const auto row = [](std::string_view name, const GateTally& g) {
    return fmt::format("{:<8} {:>16} {:>17} {:>11}\n", name, g.kernels, g.replica_accepted, g.caught);
  };
  out += fmt::format("{:<8} {:>16} {:>17} {:>11}\n", "gate", "red-team kernels", "replica accepted", "kcv caught");
  for (GateId id : kAllGates) out += row(gate_code(id), t.per_gate.count(id) ? t.per_gate.at(id) : GateTally{});
  out += row("total", t.total);
  out += fmt::format("\npositive control: {} kernels, {} failures\n", t.controls, t.control_failures);
  return out;
}

std::string render_calibration_json(const std::vector<KernelOutcome>& kernels) {
  std::vector<VerifyReport> reports;
  Json rows = Json::array();
  for (const KernelOutcome& k : kernels) {
    if (k.report) reports.push_back(*k.report);
    Json row = {{"kernel", k.name},
                          {"op", k.op},
                          {"role", k.red_team() ? "red_team" : "positive_control"},
                          {"intended_gate", k.intended ? Json(gate_code(*k.intended)) : Json(nullptr)},
                          {"replica_accepted", k.replica_accepted},
                          {"replica_note", k.replica_note},
                          {"kcv_passed", k.report ? Json(k.report->passed()) : Json(nullptr)},
                          {"as_expected", k.as_expected()},
                          {"error", k.error.empty() ? Json(nullptr) : Json(k.error)},
                          {"seconds", k.seconds}};
    rows.push_back(row);
  }
  Json doc = Json::parse(render_json(reports));
  const Tally t = tally(kernels);
  Json per_gate = Json::array();
  for (const auto& [id, g] : t.per_gate) {
    per_gate.push_back({{"gate", gate_code(id)}, {"red_team", g.kernels}, {"replica_accepted", g.replica_accepted},
                        {"kcv_caught", g.caught}});
  }
  doc["calibration"] = {{"red_team", t.total.kernels},
                        {"replica_accepted", t.total.replica_accepted},
                        {"kcv_rejected", t.rejected},
                        {"kcv_caught_by_intended_gate", t.total.caught},
                        {"positive_control", t.controls},
                        {"positive_control_failures", t.control_failures},
                        {"per_gate", per_gate},
                        {"kernels", rows}};
  return doc.dump(2) + "\n";
}

}  // namespace kcv::cli
