// File: include/kcv/verify.hpp
// The pipeline of DESIGN.md §2: plan probes per gate, generate inputs, run the oracle, run the
// candidate through an executor, judge, escalate borderline elements to MPFR, shrink failures to
// a minimal probe and attach a replay line.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kcv/candidate.hpp"
#include "kcv/executor.hpp"
#include "kcv/gate.hpp"
#include "kcv/pipeline.hpp"
#include "kcv/resource.hpp"

namespace kcv {

struct VerifyOptions {
  uint64_t seed = 0x6b6376;          // "kcv"
  std::vector<GateId> gates;         // empty: all twelve
  std::optional<ProfileId> profile;  // override the contract's declared profile
  bool shrink = true;
  bool include_large = true;                // the >= 2^20 element shapes
  std::optional<ResourceReport> resources;  // RES-02; else from the candidate's device code
  std::string replay_candidate;             // how `kcv replay` names the candidate (path[:kernel])
  std::function<void(std::string_view)> progress;  // one line per gate; may be empty
  int call_timeout_ms = CallOptions{}.timeout_ms;  // each call's deadline (<= 0: none)
  /// Nothing runs past it: calls are cut short and probing stops; max(): none.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  int max_timeouts = 2;  // timed-out calls after which probing stops (<= 0: no limit)
};

struct VerifyReport {
  std::string kernel;
  std::string op;
  Contract contract;  // with the effective profile
  uint64_t seed = 0;
  int generator_version = 0;
  std::string executor;
  std::vector<GateResult> results;        // in kAllGates order
  std::vector<std::string> replay_lines;  // one per failing gate

  bool passed() const;  // no fail and no error
};

Expected<VerifyReport> verify(Candidate& candidate, Executor& executor,
                              const VerifyOptions& options);

/// The pipeline run behind verify() for any probe source and oracle (the registered ops', the
/// GLR ops'): `options`' seed, shrinking and progress, its gates or else `default_gates` (empty:
/// all twelve), under report.contract's profile; fills report.results and a replay line, naming
/// the candidate `options.replay_candidate` (else `candidate_name`), for every failing gate.
void run_verify_pipeline(ProbeSource& source, Oracle& oracle, CandidateRunner& runner,
                         const VerifyOptions& options, const std::vector<GateId>& default_gates,
                         int shrink_runs, const std::string& candidate_name, VerifyReport& report);

/// The candidate's contract with the profile override applied (what every gate judges against).
Contract effective_contract(const Candidate& candidate, std::optional<ProfileId> profile);

/// Runs one probe and judges it (used by verify, shrinking and replay). RES-02 probes are not
/// run this way (see verify). @pre probe.gate != GateId::kRes02
GateResult run_probe(Candidate& candidate, Executor& executor, const Probe& probe,
                     const Contract& contract);

/// Shrinks a failing probe: smaller sizes, fewer injections, simpler layouts and distributions,
/// fewer launch configurations, while the gate still fails. Bounded and deterministic.
Probe shrink_probe(Candidate& candidate, Executor& executor, const Probe& failing,
                   const Contract& contract);

/// `kcv replay --candidate <c> [--profile P] --probe '<token>'`: one shell-safe line.
std::string replay_line(const std::string& candidate_ref, const Probe& probe,
                        std::optional<ProfileId> profile);

}  // namespace kcv
