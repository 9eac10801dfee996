// File: tests/unit/report/sample_report.hpp
// A synthetic VerifyReport for the renderer tests: all twelve gates, covering every verdict
// (two failures with failing probes and replay lines, one error, n/a and passes) and the
// non-finite numbers the JSON must encode as strings. Built by hand, so the tests need no kernel.
#pragma once

#include <cmath>
#include <limits>
#include <string>

#include "kcv/report.hpp"

namespace kcv::testing {

inline Probe sample_probe(GateId gate, std::string label) {
  Probe p;
  p.gate = gate;
  p.label = std::move(label);
  p.seed = 7;
  p.sizes = {{"M", 1}, {"N", 257}};
  p.inputs = {InputSpec{}};
  return p;
}

inline GateResult sample_result(GateId gate, Verdict v) {
  GateResult g;
  g.gate = gate;
  g.verdict = v;
  g.probes_run = 3;
  g.evidence.summary = std::string(gate_code(gate)) + " summary";
  g.evidence.worst_ratio = 0.25;
  g.evidence.ratio_quantiles = {0.125, 0.25, 0.25, 0.25};
  return g;
}

inline VerifyReport sample_report() {
  VerifyReport r;
  r.kernel = "redteam.sample<&>";  // characters XML must escape
  r.op = "softmax";
  r.contract.op = "softmax";
  r.contract.profile = ProfileId::kCudaDefault;
  r.seed = 0x6b6376;
  r.generator_version = 3;
  r.executor = "forked";
  for (GateId id : kAllGates) r.results.push_back(sample_result(id, Verdict::kPass));

  GateResult& cmp = r.results[0];  // CMP-01: a failure with an infinite ratio and a NaN output
  cmp.verdict = Verdict::kFail;
  cmp.evidence.summary = "candidate NaN where oracle is finite \"x\" <y>";
  cmp.evidence.worst_index = 256;
  cmp.evidence.candidate_value = std::numeric_limits<double>::quiet_NaN();
  cmp.evidence.oracle_value = -std::numeric_limits<double>::infinity();
  cmp.evidence.worst_ratio = std::numeric_limits<double>::infinity();
  cmp.evidence.violations = 1;
  cmp.failing_probe = sample_probe(GateId::kCmp01, "tile+1 N=257 normal");

  GateResult& exc = r.results[6];  // EXC-01: a second failure
  exc.verdict = Verdict::kFail;
  exc.evidence.violations = 4;
  exc.failing_probe = sample_probe(GateId::kExc01, "NaN at last position");

  r.results[8].verdict = Verdict::kError;  // PRC-01
  r.results[8].reason = "oracle could not evaluate: overflow";
  r.results[11].verdict = Verdict::kNotApplicable;  // RES-02
  r.results[11].reason = "no device code (a CPU kernel)";

  for (const GateResult& g : r.results) {
    if (g.failing_probe) r.replay_lines.push_back(replay_line("./lib.so:redteam.sample", *g.failing_probe, std::nullopt));
  }
  return r;
}

}  // namespace kcv::testing
