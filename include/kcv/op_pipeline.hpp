// File: include/kcv/op_pipeline.hpp
// The pipeline's parts for a kernel of a registered op (a C ABI kernel, an in-process C++
// candidate): probes planned from the op's signature, the fp64 op registry as the oracle, and an
// Executor (in-process, forked or worker) running the Candidate. verify() assembles these three.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "kcv/candidate.hpp"
#include "kcv/executor.hpp"
#include "kcv/pipeline.hpp"

namespace kcv {

/// The gate plans of gates/ over an op signature (shape plans, layouts, injections by size symbol).
class SignatureProbes final : public ProbeSource {
 public:
  SignatureProbes(const Op& op, const Contract& contract, bool include_large);
  const OpSignature& signature() const override;
  std::string not_applicable_reason(GateId id, const Contract& contract) const override;
  std::vector<Probe> plan(GateId id, const Contract& contract, uint64_t seed) const override;
  ProbeScope scope_of(const Probe& probe) const override;
  std::vector<Probe> simplifications(const Probe& failing, const Contract& contract) const override;

 private:
  int64_t input_numel(const Probe& p, int input) const;
  const Op& op_;
  std::map<std::string, int64_t> reference_sizes_;
  bool include_large_;
};

/// The fp64 op registry: generated inputs, Op::evaluate under the profile, MPFR for borderline
/// elements. Under a profile that permits a relaxation (maxNum, FTZ) the EXC probes also get the
/// strict result as the alternative, so either behaviour passes there.
class OpOracle final : public Oracle {
 public:
  OpOracle(const Op& op, const Contract& contract);
  Expected<ProbeInputs> make_inputs(const Probe& probe) override;
  Expected<SharedOracleResult> evaluate(const Probe& probe, const ProbeInputs& inputs,
                                        const Contract& contract) override;
  SharedOracleResult refine(const Probe& probe, const ProbeInputs& inputs, const Contract& contract,
                            const ProbeOutcome& outcome, SharedOracleResult result) override;

 private:
  const Op& op_;
  Contract contract_;
};

/// How an ExecutorRunner calls, beyond the probe: parameters that come from the probe rather than
/// the contract (a GLR probe's scale and layout), and the forked executor's deadline per call.
struct CallPolicy {
  /// Added to (and overriding) the op's merged parameters for every call of a probe; may be empty.
  std::function<std::map<std::string, double>(const Probe&)> probe_params;
  int timeout_ms = CallOptions{}.timeout_ms;
  /// No call runs past it (each call's timeout is cut to what is left), and once it has passed
  /// the runner is exhausted; max(): none.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  /// Calls that may time out before the runner is exhausted (<= 0: no limit).
  int max_timeouts = 0;
};

/// A Candidate called through an Executor, one call per (launch config, repetition), then the
/// concurrent calls; each call with its own sentinel and guard seeds.
class ExecutorRunner final : public CandidateRunner {
 public:
  ExecutorRunner(Candidate& candidate, Executor& executor, std::optional<ResourceReport> resources,
                 CallPolicy policy = {});
  std::string_view name() const override;
  std::string exhausted() const override;
  int timeouts() const override { return timeouts_; }
  ProbeOutcome run(const Probe& probe, const ProbeInputs& inputs,
                   const Contract& contract) override;
  Expected<ResourceFacts> resources() override;

 private:
  Candidate& candidate_;
  Executor& executor_;
  std::optional<ResourceReport> resources_;
  CallPolicy policy_;
  int timeouts_ = 0;
};

/// SplitMix64 finaliser: independent seeds from (seed, salt).
uint64_t mix_seed(uint64_t seed, uint64_t salt);

}  // namespace kcv
