// File: include/kcv/pipeline.hpp
// The one verification loop of DESIGN.md §2, and the three things plugged into it:
//  - a ProbeSource says which probes each gate runs (SignatureProbes for a registered op,
//    ModuleProbes for a KernelBench module; a probe is the same replayable token for both);
//  - an Oracle makes a probe's inputs and the trusted result they must give (OpOracle: the fp64
//    op registry; ModelOracle: the reference worker running Model in fp64);
//  - a CandidateRunner makes the probe's calls of the candidate (an Executor on a Candidate, or
//    the candidate worker of a module) and reports its device-code resources.
// run_pipeline plans, generates, evaluates, executes, judges, combines and shrinks for every
// requested profile at once: the candidate's calls do not depend on the profile, so each probe's
// calls are made once and judged under each profile that has not failed the gate yet. A gate
// stops at the probe where every profile has a counterexample. `kcv verify`, `kcv replay`, the
// audit and the pytest helper all go through here.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kcv/executor.hpp"
#include "kcv/gate.hpp"
#include "kcv/resource.hpp"

namespace kcv {

/// A probe's inputs as the oracle made them, and the outputs the candidate must produce.
struct ProbeInputs {
  std::vector<HostTensor> tensors;
  std::vector<OutputSpec> outputs;
  /// Non-empty: the reference does not take this probe (a shape or view it refuses, a shape
  /// over the probe budget); the probe does not count, and the reason is kept.
  std::string refused;
};

class ProbeSource {
 public:
  virtual ~ProbeSource() = default;
  /// What the judges know of the problem: tensor names and ranks, reductions, index outputs.
  virtual const OpSignature& signature() const = 0;
  /// Empty when gate `id` applies under `contract`; otherwise the reason it does not.
  virtual std::string not_applicable_reason(GateId id, const Contract& contract) const = 0;
  /// The gate's probes, the most basic scope first (ProbeScope order).
  virtual std::vector<Probe> plan(GateId id, const Contract& contract, uint64_t seed) const = 0;
  /// What a probe exercises beyond the reference input.
  virtual ProbeScope scope_of(const Probe& probe) const = 0;
  /// Simpler variants of a failing probe, simplest first: smaller sizes, fewer injections,
  /// plainer layouts and values, fewer calls. Shrinking keeps the first that still fails.
  virtual std::vector<Probe> simplifications(const Probe& failing,
                                             const Contract& contract) const = 0;
};

/// An oracle's result, shared and immutable: the profiles judging one probe read one copy (a
/// copy per profile would duplicate every output's fp64 vectors, and the fresh pages that copy
/// touches cost more than the judges), and refine copies only when it recomputes an element.
using SharedOracleResult = std::shared_ptr<const OracleResult>;

inline SharedOracleResult share(OracleResult result) {
  return std::make_shared<const OracleResult>(std::move(result));
}

class Oracle {
 public:
  virtual ~Oracle() = default;
  /// The probe's inputs and output specs; an Error is a harness failure.
  virtual Expected<ProbeInputs> make_inputs(const Probe& probe) = 0;
  /// The trusted result under `contract` (its profile decides the semantics); an Error is a
  /// harness failure. Oracle code never sees candidate outputs.
  virtual Expected<SharedOracleResult> evaluate(const Probe& probe, const ProbeInputs& inputs,
                                                const Contract& contract) = 0;
  /// Before judging: recompute exactly (MPFR) elements whose observed error is borderline. The
  /// candidate's outputs only choose *which* elements; a bound never depends on them. Returns
  /// `result` itself when no element is recomputed, otherwise a copy holding the exact values.
  virtual SharedOracleResult refine(const Probe&, const ProbeInputs&, const Contract&,
                                    const ProbeOutcome&, SharedOracleResult result) {
    return result;
  }
};

/// RES-02's input: a resource report, or the reason there is none (a CPU kernel).
struct ResourceFacts {
  std::optional<ResourceReport> report;
  std::string none_reason;
};

class CandidateRunner {
 public:
  virtual ~CandidateRunner() = default;
  /// How reports name the executor ("worker", "in-process", "kernelbench worker").
  virtual std::string_view name() const = 0;
  /// The probe's calls: launch configs x repetitions (at shifted addresses when asked), then
  /// concurrent calls, then forced autotune configs.
  virtual ProbeOutcome run(const Probe& probe, const ProbeInputs& inputs,
                           const Contract& contract) = 0;
  /// Device-code resources for RES-02; an Error when they exist but cannot be read.
  virtual Expected<ResourceFacts> resources() = 0;
  /// Non-empty once calling the candidate again is pointless (it hung twice, say): the
  /// pipeline stops issuing probes and records why.
  virtual std::string exhausted() const { return {}; }
  /// Calls that timed out so far: shrinking stops at the first one (a hanging candidate would
  /// hang once per simplification).
  virtual int timeouts() const { return 0; }
};

struct PipelineOptions {
  uint64_t seed = 0x6b6376;         // "kcv"
  std::vector<GateId> gates;        // empty: all twelve
  std::vector<ProfileId> profiles;  // empty: the contract's own
  bool shrink = true;
  int shrink_runs = 64;                            // probes tried per shrink at most
  std::function<void(std::string_view)> progress;  // one line per gate; may be empty
  std::function<bool()> keep_going;  // false: time is up; remaining probes are not run
  /// Non-empty: probing is pointless from here on, for a reason the caller owns (the KernelBench
  /// audit: the candidate struck the trusted reference worker, so the kernel is a crash whatever
  /// the gates say). Asked between probes, never while the oracle runs beside the candidate's
  /// calls; the remaining probes are not run and report.stopped says why.
  std::function<std::string()> abandon;
  /// Each probe's trusted results (Oracle::evaluate under every profile still open) are made on
  /// a thread of their own while the candidate's calls run, instead of after them. Only for an
  /// oracle and a runner that share no mutable state (the KernelBench audit: ModelOracle uses
  /// the reference's workers, ModuleRunner the candidate's), and an oracle that memoizes its
  /// results per probe and contract, so that the judges find them made. The verdicts are the
  /// same either way.
  bool evaluate_beside_calls = false;
};

struct ProfileResults {
  ProfileId profile = ProfileId::kStrict;
  std::vector<GateResult> results;  // one per gate run, in kAllGates order
};

/// Where a run's wall time went, in seconds. The four steps add up to the run's time but for
/// planning and bookkeeping; `shrink` is the part of them spent shrinking failing probes, and
/// `per_gate` splits the same time by gate (kAllGates order).
struct PipelineTimings {
  double inputs = 0;     // Oracle::make_inputs: the probe's inputs made and sent
  double candidate = 0;  // CandidateRunner::run: the candidate's calls and their evidence
  double oracle = 0;     // Oracle::evaluate and refine: the trusted result (beside the calls:
                         // only the wait for it after them)
  double judge = 0;      // the gates' judges
  double shrink = 0;     // of the above, spent shrinking
  std::array<double, kAllGates.size()> per_gate{};
  /// `judge` split by gate (kAllGates order): which gates' judges the judging time is.
  std::array<double, kAllGates.size()> judge_per_gate{};
  /// With PipelineOptions::evaluate_beside_calls: the seconds of Oracle::evaluate that ran on
  /// their own thread while the candidate's calls ran. Not one of the steps above, which stay
  /// a split of the run's wall time: the candidate's calls hid this much of the trusted result.
  double oracle_beside = 0;
};

struct PipelineReport {
  std::vector<ProfileResults> profiles;
  std::string stopped;  // non-empty: why probing stopped before the plans ended
  PipelineTimings timings;
};

PipelineReport run_pipeline(ProbeSource& source, Oracle& oracle, CandidateRunner& runner,
                            const Contract& contract, const PipelineOptions& options);

/// Runs and judges one probe under `contract` (shrinking and `kcv replay` use this). RES-02 has
/// no probes. @pre probe.gate != GateId::kRes02
GateResult judge_probe(ProbeSource& source, Oracle& oracle, CandidateRunner& runner,
                       const Probe& probe, const Contract& contract);

/// Shrinks a failing probe through source.simplifications while the gate still fails; bounded by
/// `max_runs` and deterministic.
Probe shrink_failing_probe(ProbeSource& source, Oracle& oracle, CandidateRunner& runner,
                           const Probe& failing, const Contract& contract, int max_runs);

/// The simplifications of a failing probe that keep its shape, simplest first: each injection
/// dropped, each layout made contiguous, each input's values made `plain` (inputs already
/// `plain`, or in `keep`, stay), one launch configuration or autotune config left, two calls
/// instead of more. Probe sources add their size simplifications around these.
std::vector<Probe> same_shape_simplifications(const Probe& failing, Distribution plain,
                                              Distribution keep);

/// The contract with its profile replaced.
Contract with_profile(const Contract& contract, ProfileId profile);

}  // namespace kcv
