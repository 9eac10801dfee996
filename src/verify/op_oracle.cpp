// File: src/verify/op_oracle.cpp
// OpOracle: inputs from the seeded generators, Op::evaluate under the profile, and MPFR for
// elements whose observed error lies within 2x of tau. Escalation looks at candidate outputs only
// to choose *which* oracle elements deserve a second, exact computation; the bound never depends
// on the candidate, so a candidate cannot widen its own tolerance. A profile's relaxations are
// permissions: under maxNum or FTZ the EXC probes carry the strict result as the alternative.
#include <cmath>
#include <set>

#include "kcv/generate.hpp"
#include "kcv/op_pipeline.hpp"

namespace kcv {
namespace {

constexpr int kEscalationLimit = 64;  // elements per output

bool relaxes(const Profile& p) { return p.nan_minmax == NanMinMax::kNumber || p.flush_subnormals; }

}  // namespace

OpOracle::OpOracle(const Op& op, const Contract& contract) : op_(op), contract_(contract) {}

Expected<ProbeInputs> OpOracle::make_inputs(const Probe& probe) {
  ProbeInputs in;
  const OpSignature& sig = op_.signature();
  in.tensors = kcv::make_inputs(probe, sig);
  const std::vector<DType> dtypes = output_dtypes(sig, contract_);
  for (std::size_t k = 0; k < sig.outputs.size(); ++k) {
    in.outputs.push_back(OutputSpec{dtypes[k], shape_of(sig.outputs[k], probe.sizes)});
  }
  return in;
}

Expected<SharedOracleResult> OpOracle::evaluate(const Probe& probe, const ProbeInputs& inputs,
                                                const Contract& contract) {
  OracleResult r = op_.evaluate(inputs.tensors, contract);
  const bool exc = probe.gate == GateId::kExc01 || probe.gate == GateId::kExc02;
  if (exc && relaxes(profile(contract.profile))) {
    const OracleResult strict =
        op_.evaluate(inputs.tensors, with_profile(contract, ProfileId::kStrict));
    for (std::size_t o = 0; o < r.outputs.size() && o < strict.outputs.size(); ++o) {
      r.outputs[o].alternative = strict.outputs[o].value;
    }
  }
  return share(std::move(r));
}

SharedOracleResult OpOracle::refine(const Probe&, const ProbeInputs& inputs,
                                    const Contract& contract, const ProbeOutcome& outcome,
                                    SharedOracleResult result) {
  std::shared_ptr<OracleResult> refined;  // the copy, made at the first recomputed element
  for (std::size_t o = 0; o < result->outputs.size(); ++o) {
    const OracleOutput& out = result->outputs[o];
    std::set<int64_t> borderline;  // over all calls: repeated calls share one recomputation
    for (const CallRecord& call : outcome.calls) {
      if (call.status != CallStatus::kOk || o >= call.outputs.size()) continue;
      const HostTensor& got = call.outputs[o];
      if (got.numel() != static_cast<int64_t>(out.value.size())) continue;
      for (int64_t i = 0; i < got.numel() && std::ssize(borderline) < kEscalationLimit; ++i) {
        const auto k = static_cast<std::size_t>(i);
        if (!std::isfinite(out.value[k]) || out.tau[k] <= 0) continue;
        const double ratio = std::fabs(got.value_at(i) - out.value[k]) / out.tau[k];
        if (ratio >= 0.5 && ratio <= 2.0) borderline.insert(i);
      }
    }
    if (borderline.empty()) continue;
    const std::vector<int64_t> indices(borderline.begin(), borderline.end());
    const auto exact =
        op_.evaluate_exact_many(inputs.tensors, contract, static_cast<int>(o), indices);
    for (std::size_t k = 0; k < indices.size(); ++k) {
      if (!exact[k]) continue;
      if (!refined) refined = std::make_shared<OracleResult>(*result);
      refined->outputs[o].value[static_cast<std::size_t>(indices[k])] = *exact[k];
      refined->escalated = true;
    }
  }
  if (refined) return refined;
  return result;
}

}  // namespace kcv
