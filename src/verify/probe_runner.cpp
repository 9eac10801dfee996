// File: src/verify/probe_runner.cpp
// Probe execution and MPFR escalation. Escalation looks at candidate outputs only to choose
// *which* oracle elements deserve a second, exact computation; the bound itself never depends on
// the candidate, so a candidate cannot widen its own tolerance.
#include "verify/probe_runner.hpp"

#include <cmath>
#include <set>

#include "kcv/generate.hpp"

namespace kcv::detail {

uint64_t mix_seed(uint64_t seed, uint64_t salt) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (salt + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

namespace {

std::vector<OutputSpec> output_specs(const OracleResult& oracle) {
  std::vector<OutputSpec> specs;
  for (const auto& o : oracle.outputs) specs.push_back({o.dtype, o.shape});
  return specs;
}

CallOptions call_options(const Probe& probe, const Contract& contract, const OpSignature& sig,
                         const LaunchConfig& launch, int repetition, uint64_t call_index) {
  CallOptions opts;
  opts.launch = launch;
  opts.params = merged_params(sig, contract);
  opts.sentinel_seed = mix_seed(probe.seed, 2 * call_index);
  // Element-aligned for every dtype, but different addresses and 16/32/64-byte alignments.
  opts.address_shift = probe.shift_addresses ? repetition * 16 + 16 : 0;
  opts.randomize_guards = probe.randomize_guards;
  opts.guard_seed = mix_seed(probe.seed, 2 * call_index + 1);
  return opts;
}

}  // namespace

ProbeData execute_probe(Candidate& candidate, Executor& executor, const Op& op,
                        const Contract& contract, const Probe& probe) {
  ProbeData data;
  const OpSignature& sig = op.signature();
  data.inputs = make_inputs(probe, sig);
  data.oracle = op.evaluate(data.inputs, contract);
  const auto specs = output_specs(data.oracle);

  std::vector<LaunchConfig> configs = probe.launch_configs;
  if (configs.empty()) configs.push_back(LaunchConfig{});
  uint64_t call_index = 0;
  for (const LaunchConfig& launch : configs) {
    for (int r = 0; r < std::max(1, probe.repetitions); ++r) {
      CallOptions opts = call_options(probe, contract, sig, launch, r, call_index++);
      data.outcome.calls.push_back(executor.run(candidate, data.inputs, specs, opts));
    }
  }
  if (probe.concurrency > 1) {
    std::vector<CallOptions> all;
    for (int i = 0; i < probe.concurrency; ++i) {
      all.push_back(call_options(probe, contract, sig, configs.front(), i, call_index++));
    }
    for (auto& rec : executor.run_concurrently(candidate, data.inputs, specs, all)) {
      data.outcome.calls.push_back(std::move(rec));
    }
  }
  return data;
}

bool escalate_borderline(const Op& op, const Contract& contract, ProbeData& data, int limit) {
  bool any = false;
  for (std::size_t o = 0; o < data.oracle.outputs.size(); ++o) {
    OracleOutput& out = data.oracle.outputs[o];
    std::set<int64_t> borderline;  // over all calls: repeated calls share one recomputation
    for (const CallRecord& call : data.outcome.calls) {
      if (call.status != CallStatus::kOk || o >= call.outputs.size()) continue;
      const HostTensor& got = call.outputs[o];
      if (got.numel() != static_cast<int64_t>(out.value.size())) continue;
      for (int64_t i = 0; i < got.numel() && std::ssize(borderline) < limit; ++i) {
        const auto k = static_cast<std::size_t>(i);
        if (!std::isfinite(out.value[k]) || out.tau[k] <= 0) continue;
        const double ratio = std::fabs(got.value_at(i) - out.value[k]) / out.tau[k];
        if (ratio >= 0.5 && ratio <= 2.0) borderline.insert(i);
      }
    }
    if (borderline.empty()) continue;
    const std::vector<int64_t> indices(borderline.begin(), borderline.end());
    const auto exact = op.evaluate_exact_many(data.inputs, contract, static_cast<int>(o), indices);
    for (std::size_t k = 0; k < indices.size(); ++k) {
      if (!exact[k]) continue;
      out.value[static_cast<std::size_t>(indices[k])] = *exact[k];
      any = true;
    }
  }
  return any;
}

}  // namespace kcv::detail
