// File: src/verify/probe_runner.hpp
// Executes one probe: inputs from the generator, the oracle on those exact inputs, then the
// candidate calls the probe asks for (launch configs x repetitions, then concurrent calls),
// each through the executor with its own sentinel and guard seeds.
#pragma once

#include <vector>

#include "kcv/call.hpp"
#include "kcv/candidate.hpp"
#include "kcv/executor.hpp"
#include "kcv/op.hpp"
#include "kcv/probe.hpp"

namespace kcv::detail {

struct ProbeData {
  std::vector<HostTensor> inputs;
  OracleResult oracle;
  ProbeOutcome outcome;
};

/// SplitMix64 finaliser: derives independent seeds from (seed, salt).
uint64_t mix_seed(uint64_t seed, uint64_t salt);

ProbeData execute_probe(Candidate& candidate, Executor& executor, const Op& op,
                        const Contract& contract, const Probe& probe);

/// Recomputes with MPFR the oracle elements whose observed error lies within 2x of tau
/// (ratio in [0.5, 2]), at most `limit` per output; returns true if any was recomputed.
bool escalate_borderline(const Op& op, const Contract& contract, ProbeData& data, int limit = 64);

}  // namespace kcv::detail
