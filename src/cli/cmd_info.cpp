// File: src/cli/cmd_info.cpp
// The reference commands: `kcv gates` (one line per gate), `kcv explain <GATE>` (the long text),
// `kcv ops` (the oracle's operators with their signatures). All text comes from the tables in
// src/gates and src/oracle, so the CLI cannot drift from what the gates actually do.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/cli_error.hpp"
#include "cli/common.hpp"
#include "cli/tools.hpp"
#include "kcv/gate.hpp"
#include "kcv/op.hpp"

namespace kcv::cli {
namespace {

std::string tensor_list(const std::vector<TensorSig>& tensors) {
  std::vector<std::string> parts;
  for (const TensorSig& t : tensors) parts.push_back(fmt::format("{}[{}]", t.name, fmt::join(t.dims, ",")));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string param_list(const std::map<std::string, double>& params) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : params) parts.push_back(fmt::format("{}={}", name, value));
  return fmt::format("{}", fmt::join(parts, " "));
}

}  // namespace

void configure_gates(CLI::App& /*cmd*/, CliOptions& /*o*/) {}

ExitStatus run_gates(const CliOptions& /*o*/) {
  for (GateId id : kAllGates) {
    const GateDef& def = gate_def(id);
    fmt::print("{}  {}{}\n", def.code, def.title, def.tolerance_free ? "  [tolerance-free]" : "");
  }
  return ExitStatus::kSuccess;
}

void configure_explain(CLI::App& cmd, CliOptions& o) {
  cmd.add_option("gate", o.gate, "a gate code, e.g. EXC-01")->required();
}

ExitStatus run_explain(const CliOptions& o) {
  auto id = parse_gate(o.gate);
  if (!id) usage_error(fmt::format("unknown gate '{}' (gates: {})", o.gate, all_gate_codes()));
  const GateDef& def = gate_def(*id);
  fmt::print("{}: {}{}\n\n{}\n", def.code, def.title, def.tolerance_free ? " (tolerance-free)" : "",
             def.explanation);
  return ExitStatus::kSuccess;
}

void configure_ops(CLI::App& /*cmd*/, CliOptions& /*o*/) {}

ExitStatus run_ops(const CliOptions& /*o*/) {
  for (const Op* op : all_ops()) {
    const OpSignature& sig = op->signature();
    std::string line = fmt::format("{:<12} ({}) -> ({})", sig.name, tensor_list(sig.inputs), tensor_list(sig.outputs));
    if (!sig.default_params.empty()) line += "  params: " + param_list(sig.default_params);
    if (!sig.reduction_dim.empty()) line += "  reduces " + sig.reduction_dim;
    fmt::print("{}\n", line);
    if (!sig.summary.empty()) fmt::print("{:<12} {}\n", "", sig.summary);
  }
  return ExitStatus::kSuccess;
}

}  // namespace kcv::cli
