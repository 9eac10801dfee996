// File: src/verify/replica.cpp
// KernelBench's one-shot check, replicated to measure the rigor gap (include/kcv/replica.hpp).
#include "kcv/replica.hpp"

#include <cmath>

#include <fmt/format.h>

#include "kcv/generate.hpp"
#include "kcv/op.hpp"

namespace kcv {

namespace {

Probe replica_probe(const OpSignature& sig, const Contract& contract, uint64_t seed) {
  Probe p;
  p.gate = GateId::kCmp01;
  p.label = fmt::format("allclose replica seed {}", seed);
  p.seed = seed;
  p.sizes = sig.reference_sizes;
  for (const auto& [dim, v] : contract.reference_sizes) p.sizes[dim] = v;
  for (DType t : input_dtypes(sig, contract)) p.inputs.push_back({t, Distribution::kNormal, Layout{}});
  return p;
}

}  // namespace

std::string allclose_failure(std::span<const double> reference, const HostTensor& got, double atol, double rtol,
                             double& max_abs_diff) {
  for (int64_t i = 0; i < got.numel() && i < std::ssize(reference); ++i) {
    const double r = reference[static_cast<std::size_t>(i)];
    const double c = got.value_at(i);
    if (std::isnan(c) || std::isnan(r)) return fmt::format("NaN in the {} at element {}", std::isnan(c) ? "candidate" : "reference", i);
    if (c == r) continue;  // equal infinities included
    const double diff = std::fabs(c - r);
    if (std::isfinite(diff)) max_abs_diff = std::max(max_abs_diff, diff);
    if (!(diff <= atol + rtol * std::fabs(c))) {
      return fmt::format("element {}: got {} expected {} (|diff| {:.3g})", i, c, r, diff);
    }
  }
  return {};
}

Expected<ReplicaResult> allclose_replica(Candidate& candidate, Executor& executor,
                                         const ReplicaOptions& options) {
  const Op* op = find_op(candidate.op());
  if (op == nullptr) {
    return make_error(ErrorCode::kInvalidArgument, fmt::format("unknown op '{}'", candidate.op()),
                      candidate.name());
  }
  const Contract& contract = candidate.contract();
  ReplicaResult result;
  for (int t = 0; t < options.trials; ++t) {
    const Probe probe = replica_probe(op->signature(), contract, options.first_seed + t);
    const std::vector<HostTensor> inputs = make_inputs(probe, op->signature());
    const OracleResult oracle = op->evaluate(inputs, contract);
    std::vector<OutputSpec> specs;
    for (const auto& o : oracle.outputs) specs.push_back({o.dtype, o.shape});
    CallOptions call;
    call.params = merged_params(op->signature(), contract);
    call.plain_buffers = true;
    const CallRecord rec = executor.run(candidate, inputs, specs, call);
    ++result.trials_run;
    if (rec.status != CallStatus::kOk) {
      result.reason = fmt::format("trial {}: {} {}", t, call_status_name(rec.status), rec.message);
      return result;
    }
    for (std::size_t o = 0; o < oracle.outputs.size(); ++o) {
      std::vector<double> reference = oracle.outputs[o].value;
      for (double& x : reference) x = round_to(oracle.outputs[o].dtype, x);
      std::string why = allclose_failure(reference, rec.outputs[o], options.atol, options.rtol, result.max_abs_diff);
      if (!why.empty()) {
        result.reason = fmt::format("trial {} output {}: {}", t, o, why);
        return result;
      }
    }
  }
  result.accepted = true;
  return result;
}

}  // namespace kcv
