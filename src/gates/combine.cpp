// File: src/gates/combine.cpp
// Folding per-probe results into one verdict per gate: fail beats error beats pass beats n/a
// (a failure is a counterexample and outranks kcv's own inability to decide elsewhere). Within
// the winning verdict the probe with the largest worst_ratio supplies the evidence (the first
// on ties), so a passing gate reports its tightest margin and a failing one its worst violation.
#include <fmt/format.h>

#include "kcv/gate.hpp"

namespace kcv {

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "pass";
    case Verdict::kFail: return "fail";
    case Verdict::kNotApplicable: return "not_applicable";
    case Verdict::kError: return "error";
  }
  return "unknown";
}

namespace {

int severity(Verdict v) {
  switch (v) {
    case Verdict::kFail: return 3;
    case Verdict::kError: return 2;
    case Verdict::kPass: return 1;
    case Verdict::kNotApplicable: return 0;
  }
  return 0;
}

bool worse(const GateResult& a, const GateResult& b) {
  if (severity(a.verdict) != severity(b.verdict)) return severity(a.verdict) > severity(b.verdict);
  return a.evidence.worst_ratio > b.evidence.worst_ratio;
}

}  // namespace

GateResult combine_results(GateId id, const std::vector<GateResult>& per_probe) {
  if (per_probe.empty()) {
    GateResult r;
    r.gate = id;
    r.verdict = Verdict::kNotApplicable;
    r.reason = "no probe was run";
    return r;
  }
  std::size_t worst = 0;
  int probes = 0;
  for (std::size_t k = 0; k < per_probe.size(); ++k) {
    probes += per_probe[k].probes_run;
    if (worse(per_probe[k], per_probe[worst])) worst = k;
  }
  GateResult r = per_probe[worst];
  r.gate = id;
  r.probes_run = probes;
  if (r.verdict != Verdict::kFail) r.failing_probe.reset();
  return r;
}

}  // namespace kcv
