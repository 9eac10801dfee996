// File: src/verify/executor_runner.cpp
// ExecutorRunner: a probe's calls through an Executor. Call k of a probe gets the sentinel seed
// mix(seed, 2k) and the guard seed mix(seed, 2k + 1); repetitions of an address-shifting probe sit
// 16 bytes further each (element-aligned for every dtype, but different 16/32/64-byte alignments).
#include <fmt/format.h>

#include <algorithm>

#include "kcv/op_pipeline.hpp"

namespace kcv {

uint64_t mix_seed(uint64_t seed, uint64_t salt) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (salt + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

namespace {

CallOptions call_options(const Probe& probe, const Contract& contract, const Candidate& candidate,
                         const CallPolicy& policy, const LaunchConfig& launch, int repetition,
                         uint64_t call_index) {
  CallOptions opts;
  opts.launch = launch;
  if (const Op* op = find_op(candidate.op()); op != nullptr)
    opts.params = merged_params(op->signature(), contract);
  if (policy.probe_params) {
    for (const auto& [name, value] : policy.probe_params(probe)) opts.params[name] = value;
  }
  opts.timeout_ms = policy.timeout_ms;
  if (policy.deadline != std::chrono::steady_clock::time_point::max()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          policy.deadline - std::chrono::steady_clock::now())
                          .count();
    const int cut = static_cast<int>(std::clamp<int64_t>(left, 1, 1 << 30));
    opts.timeout_ms = opts.timeout_ms > 0 ? std::min(opts.timeout_ms, cut) : cut;
  }
  opts.sentinel_seed = mix_seed(probe.seed, 2 * call_index);
  opts.address_shift = probe.shift_addresses ? repetition * 16 + 16 : 0;
  opts.randomize_guards = probe.randomize_guards;
  opts.guard_seed = mix_seed(probe.seed, 2 * call_index + 1);
  return opts;
}

}  // namespace

ExecutorRunner::ExecutorRunner(Candidate& candidate, Executor& executor,
                               std::optional<ResourceReport> resources, CallPolicy policy)
    : candidate_(candidate),
      executor_(executor),
      resources_(std::move(resources)),
      policy_(std::move(policy)) {}

std::string_view ExecutorRunner::name() const { return executor_.name(); }

std::string ExecutorRunner::exhausted() const {
  if (std::chrono::steady_clock::now() >= policy_.deadline) return "the deadline was reached";
  if (policy_.max_timeouts > 0 && timeouts_ >= policy_.max_timeouts)
    return fmt::format("the candidate timed out {} times (the limit per call is {} ms)", timeouts_,
                       policy_.timeout_ms);
  return {};
}

ProbeOutcome ExecutorRunner::run(const Probe& probe, const ProbeInputs& inputs,
                                 const Contract& contract) {
  ProbeOutcome outcome;
  std::vector<LaunchConfig> configs = probe.launch_configs;
  if (configs.empty()) configs.push_back(LaunchConfig{});
  uint64_t call_index = 0;
  for (const LaunchConfig& launch : configs) {
    for (int r = 0; r < std::max(1, probe.repetitions); ++r) {
      const CallOptions opts =
          call_options(probe, contract, candidate_, policy_, launch, r, call_index++);
      outcome.calls.push_back(executor_.run(candidate_, inputs.tensors, inputs.outputs, opts));
      if (outcome.calls.back().status == CallStatus::kTimeout) ++timeouts_;
    }
  }
  if (probe.concurrency > 1) {
    std::vector<CallOptions> all;
    for (int i = 0; i < probe.concurrency; ++i) {
      all.push_back(
          call_options(probe, contract, candidate_, policy_, configs.front(), i, call_index++));
    }
    for (auto& rec : executor_.run_concurrently(candidate_, inputs.tensors, inputs.outputs, all)) {
      if (rec.status == CallStatus::kTimeout) ++timeouts_;
      outcome.calls.push_back(std::move(rec));
    }
  }
  return outcome;
}

Expected<ResourceFacts> ExecutorRunner::resources() {
  if (resources_) return ResourceFacts{resources_, {}};
  const auto path = candidate_.device_code();
  if (!path) return ResourceFacts{std::nullopt, "no device code (a CPU kernel)"};
  auto report = load_resource_report(*path);
  if (!report) return report.error();
  return ResourceFacts{std::move(*report), {}};
}

}  // namespace kcv
