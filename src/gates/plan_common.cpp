// File: src/gates/plan_common.cpp
// Size assignments and element positions for probe plans. Everything is computed from the
// signature's dim symbols, so a plan never hard-codes an op's layout; the only op names used are
// in near_overflow_safe(), a semantic fact the signature does not carry.
#include "gates/plan_common.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace kcv::gates {

namespace {

uint64_t splitmix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

const TensorSig* input_sig(const OpSignature& sig, std::size_t i) {
  return i < sig.inputs.size() ? &sig.inputs[i] : nullptr;
}

}  // namespace

uint64_t probe_seed(uint64_t seed, GateId gate, std::size_t k) {
  const uint64_t g = static_cast<uint64_t>(gate) + 1;
  return splitmix(splitmix(seed + 0x9e3779b97f4a7c15ULL * g) + 0x9e3779b97f4a7c15ULL * (k + 1));
}

std::vector<Probe> number_probes(std::vector<Probe> probes, GateId gate, uint64_t seed) {
  for (std::size_t k = 0; k < probes.size(); ++k) {
    probes[k].gate = gate;
    probes[k].seed = probe_seed(seed, gate, k);
  }
  return probes;
}

Sizes reference_sizes(const OpSignature& sig, const Contract& contract) {
  Sizes s = sig.reference_sizes;
  for (const auto& [dim, v] : contract.reference_sizes) s[dim] = v;
  return s;
}

bool is_fixed(const Contract& contract, const std::string& dim) {
  const auto& f = contract.fixed_dims;
  return dim == "R" || dim == "S" || std::find(f.begin(), f.end(), dim) != f.end();
}

std::string innermost_dim(const OpSignature& sig) {
  if (sig.inputs.empty() || sig.inputs.front().dims.empty()) return {};
  return sig.inputs.front().dims.back();
}

Sizes tail_sizes(const OpSignature& sig, const Contract& contract) {
  Sizes s = reference_sizes(sig, contract);
  const std::string d = innermost_dim(sig);
  if (!d.empty() && !is_fixed(contract, d)) s[d] = std::max<int64_t>(contract.tile, 1) + 1;
  return s;
}

int64_t output_numel(const OpSignature& sig, const Sizes& sizes) {
  int64_t n = 0;
  for (const auto& o : sig.outputs) n += numel(shape_of(o, sizes));
  return n;
}

Sizes spread_outputs(const OpSignature& sig, const Contract& contract, Sizes sizes,
                     const std::string& keep, int64_t min_outputs) {
  std::vector<std::string> grow;
  for (auto& [dim, v] : sizes) {
    if (dim != keep && !is_fixed(contract, dim)) v = 1;
  }
  for (const auto& o : sig.outputs) {
    for (const auto& d : o.dims) {
      if (d != keep && !is_fixed(contract, d) && std::find(grow.begin(), grow.end(), d) == grow.end()) {
        grow.push_back(d);
      }
    }
  }
  for (std::size_t k = 0; !grow.empty() && output_numel(sig, sizes) < min_outputs; ++k) {
    sizes[grow[k % grow.size()]] *= 2;
  }
  return sizes;
}

int64_t input_numel(const OpSignature& sig, std::size_t input, const Sizes& sizes) {
  const TensorSig* t = input_sig(sig, input);
  return t == nullptr ? 0 : numel(shape_of(*t, sizes));
}

int64_t total_input_numel(const OpSignature& sig, const Sizes& sizes) {
  int64_t n = 0;
  for (std::size_t i = 0; i < sig.inputs.size(); ++i) n += input_numel(sig, i, sizes);
  return n;
}

bool same_dims(const OpSignature& sig, std::size_t i, std::size_t j) {
  const TensorSig* a = input_sig(sig, i);
  const TensorSig* b = input_sig(sig, j);
  return a != nullptr && b != nullptr && a->dims == b->dims;
}

Probe make_probe(const OpSignature& sig, const Contract& contract, Sizes sizes, Distribution dist,
                 std::string label) {
  Probe p;
  p.label = std::move(label);
  p.sizes = std::move(sizes);
  const std::vector<DType> dtypes = input_dtypes(sig, contract);
  for (std::size_t i = 0; i < sig.inputs.size(); ++i) {
    InputSpec spec;
    spec.dtype = i < dtypes.size() ? dtypes[i] : DType::kF32;
    spec.dist = is_floating(spec.dtype) ? dist : Distribution::kSmallIndex;
    p.inputs.push_back(spec);
  }
  return p;
}

int64_t line_index(const OpSignature& sig, std::size_t input, const Sizes& sizes,
                   const std::string& dim, int64_t line, int64_t k) {
  const TensorSig* t = input_sig(sig, input);
  if (t == nullptr) return -1;
  const Shape shape = shape_of(*t, sizes);
  const auto axis = std::find(t->dims.begin(), t->dims.end(), dim) - t->dims.begin();
  if (axis >= static_cast<std::ptrdiff_t>(shape.size()) || k < 0 || k >= shape[axis]) return -1;
  std::vector<int64_t> coord(shape.size(), 0);
  coord[axis] = k;
  for (std::size_t a = 0; a < shape.size(); ++a) {  // the first other dim with room for lines
    if (static_cast<std::ptrdiff_t>(a) == axis || shape[a] < 2) continue;
    coord[a] = std::clamp<int64_t>(line, 0, shape[a] - 1);
    break;
  }
  const std::vector<int64_t> strides = contiguous_strides(shape);
  int64_t index = 0;
  for (std::size_t a = 0; a < shape.size(); ++a) index += coord[a] * strides[a];
  return index;
}

int64_t line_count(const OpSignature& sig, std::size_t input, const Sizes& sizes, const std::string& dim) {
  const TensorSig* t = input_sig(sig, input);
  if (t == nullptr) return 0;
  const auto it = sizes.find(dim);
  if (it == sizes.end() || it->second <= 0) return 0;
  return input_numel(sig, input, sizes) / it->second;
}

bool near_overflow_safe(const OpSignature& sig) {
  constexpr std::array<std::string_view, 6> kSafe = {"relu", "clamp", "maximum", "max", "argmax", "sqrt"};
  return std::find(kSafe.begin(), kSafe.end(), sig.name) != kSafe.end();
}

bool huge_safe_elementwise(const OpSignature& sig) {
  return sig.op_class == OpClass::kElementwise && sig.name.rfind("gelu", 0) != 0;
}

bool huge_safe_reduction(const OpSignature& sig) {
  constexpr std::array<std::string_view, 7> kSafe = {"sum",     "mean",        "max",   "argmax",
                                                     "softmax", "log_softmax", "cumsum"};
  return std::find(kSafe.begin(), kSafe.end(), sig.name) != kSafe.end();
}

bool two_huge_safe(const OpSignature& sig) { return huge_safe_reduction(sig) && sig.name != "mean"; }

}  // namespace kcv::gates
