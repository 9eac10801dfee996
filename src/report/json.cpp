// File: src/report/json.cpp
// The JSON report, schema version kReportSchemaVersion, documented field by field in
// docs/report_schema.md. JSON has no NaN or infinity, so non-finite numbers are written as the
// strings "nan", "inf" and "-inf"; every other number stays a JSON number. The contract is
// embedded as the object contract_to_json produces, so the report can be re-read as a contract.
#include <cmath>
#include <nlohmann/json.hpp>

#include "kcv/report.hpp"
#include "report/report_common.hpp"

namespace kcv {
namespace {

using json = nlohmann::ordered_json;  // fields in the documented order

json number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return x;
}

json evidence_json(const Evidence& e) {
  json quantiles = json::array();
  for (double q : e.ratio_quantiles) quantiles.push_back(number(q));
  return {{"summary", e.summary},
          {"probe_label", e.probe_label},
          {"output", e.output},
          {"worst_index", e.worst_index},
          {"candidate_value", number(e.candidate_value)},
          {"oracle_value", number(e.oracle_value)},
          {"worst_ratio", number(e.worst_ratio)},
          {"ratio_quantiles", quantiles},
          {"bits_lost", number(e.bits_lost)},
          {"violations", e.violations}};
}

json gate_json(const VerifyReport& r, std::size_t i) {
  const GateResult& g = r.results[i];
  const std::optional<std::string> replay = report::replay_for(r, i);
  return {
      {"gate", gate_code(g.gate)},
      {"verdict", report::verdict_word(g.verdict)},
      {"reason", g.reason},
      {"probes_run", g.probes_run},
      {"evidence", evidence_json(g.evidence)},
      {"failing_probe", g.failing_probe ? json(probe_to_token(*g.failing_probe)) : json(nullptr)},
      {"replay", replay ? json(*replay) : json(nullptr)}};
}

json report_json(const VerifyReport& r) {
  json gates = json::array();
  for (std::size_t i = 0; i < r.results.size(); ++i) gates.push_back(gate_json(r, i));
  return {{"kernel", r.kernel},
          {"op", r.op},
          {"contract", json::parse(contract_to_json(r.contract))},
          {"seed", r.seed},
          {"generator_version", r.generator_version},
          {"executor", r.executor},
          {"passed", r.passed()},
          {"gates", gates}};
}

}  // namespace

std::string render_json(const std::vector<VerifyReport>& reports) {
  json list = json::array();
  for (const VerifyReport& r : reports) list.push_back(report_json(r));
  const json doc = {{"schema_version", kReportSchemaVersion},
                    {"tool", "kcv"},
                    {"kcv_version", kcv_version()},
                    {"reports", list}};
  return doc.dump(2) + "\n";
}

}  // namespace kcv
