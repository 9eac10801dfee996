// File: src/verify/op_probes.cpp
// SignatureProbes: the gate plans of src/gates over a registered op's signature, the scope of a
// probe (by comparing it with the reference input), and the shrink passes of Hypothesis's manner
// (smaller sizes of each free dimension, then dropping injections, plainer layouts and values,
// fewer launch configurations and calls), simplest first.
#include <algorithm>
#include <set>

#include "kcv/op_pipeline.hpp"

namespace kcv {
namespace {

std::vector<int64_t> smaller_values(int64_t v) {
  std::set<int64_t> out;
  for (int64_t c : {int64_t{1}, int64_t{2}, int64_t{3}, v / 4, v / 2, v - 1}) {
    if (c >= 1 && c < v) out.insert(c);
  }
  return {out.begin(), out.end()};
}

bool fixed_dim(const Contract& c, const std::string& dim) {
  return dim == "R" || dim == "S" ||
         std::find(c.fixed_dims.begin(), c.fixed_dims.end(), dim) != c.fixed_dims.end();
}

}  // namespace

SignatureProbes::SignatureProbes(const Op& op, const Contract& contract, bool include_large)
    : op_(op), reference_sizes_(op.signature().reference_sizes), include_large_(include_large) {
  for (const auto& [dim, v] : contract.reference_sizes) reference_sizes_[dim] = v;
}

const OpSignature& SignatureProbes::signature() const { return op_.signature(); }

std::string SignatureProbes::not_applicable_reason(GateId id, const Contract& contract) const {
  return gate_def(id).not_applicable_reason(op_.signature(), contract);
}

std::vector<Probe> SignatureProbes::plan(GateId id, const Contract& contract, uint64_t seed) const {
  std::vector<Probe> probes = gate_def(id).plan(op_.signature(), contract, seed);
  if (!include_large_) {
    std::erase_if(probes,
                  [](const Probe& p) { return p.label.find("large") != std::string::npos; });
  }
  return probes;
}

ProbeScope SignatureProbes::scope_of(const Probe& p) const {
  for (const InputSpec& in : p.inputs) {
    if (in.layout.kind != LayoutKind::kContiguous) return ProbeScope::kLayout;
  }
  if (p.sizes != reference_sizes_) return ProbeScope::kShape;
  if (p.repetitions > 1 || p.concurrency > 1 || p.launch_configs.size() > 1 || p.shift_addresses) {
    return ProbeScope::kRepeat;
  }
  const bool plain = std::all_of(p.inputs.begin(), p.inputs.end(), [](const InputSpec& in) {
    return in.dist == Distribution::kNormal || in.dist == Distribution::kDrawn ||
           in.dist == Distribution::kSmallIndex;
  });
  return plain && p.injections.empty() ? ProbeScope::kReference : ProbeScope::kValues;
}

int64_t SignatureProbes::input_numel(const Probe& p, int input) const {
  const auto& inputs = op_.signature().inputs;
  if (input < 0 || input >= static_cast<int>(inputs.size())) return 0;
  return numel(shape_of(inputs[static_cast<std::size_t>(input)], p.sizes));
}

std::vector<Probe> SignatureProbes::simplifications(const Probe& best,
                                                    const Contract& contract) const {
  std::vector<Probe> out;
  for (const auto& [dim, value] : best.sizes) {
    if (fixed_dim(contract, dim)) continue;
    for (int64_t v : smaller_values(value)) {
      Probe p = best;
      p.sizes[dim] = v;
      // Injections must stay inside the smaller tensors.
      std::erase_if(p.injections,
                    [&](const Injection& inj) { return inj.index >= input_numel(p, inj.input); });
      out.push_back(std::move(p));
    }
  }
  for (Probe& p :
       same_shape_simplifications(best, Distribution::kNormal, Distribution::kSmallIndex)) {
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace kcv
