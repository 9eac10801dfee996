// File: src/gen/sizes.cpp
// Size-symbol helpers: shapes from a size assignment and the cost measures the shape plan
// keeps under budget.
#include "gen/sizes.hpp"

#include <algorithm>

namespace kcv::gen {
namespace {

int64_t size_of(const OpSignature& sig, const std::string& dim, const std::map<std::string, int64_t>& sizes) {
  if (const auto it = sizes.find(dim); it != sizes.end()) {
    return it->second;
  }
  if (const auto it = sig.reference_sizes.find(dim); it != sig.reference_sizes.end()) {
    return it->second;
  }
  return 1;
}

}  // namespace

Shape shape_from_sizes(const OpSignature& sig, const TensorSig& t, const std::map<std::string, int64_t>& sizes) {
  Shape shape;
  shape.reserve(t.dims.size());
  for (const std::string& dim : t.dims) {
    shape.push_back(size_of(sig, dim, sizes));
  }
  return shape;
}

std::map<std::string, int64_t> reference_sizes(const OpSignature& sig, const Contract& contract) {
  std::map<std::string, int64_t> sizes = sig.reference_sizes;
  for (const auto& [dim, size] : contract.reference_sizes) {
    sizes[dim] = size;
  }
  for (const std::string& dim : size_symbols(sig)) {
    sizes.emplace(dim, 1);
  }
  return sizes;
}

std::vector<std::string> size_symbols(const OpSignature& sig) {
  std::vector<std::string> symbols;
  auto add = [&symbols](const std::vector<TensorSig>& tensors) {
    for (const TensorSig& t : tensors) {
      for (const std::string& dim : t.dims) {
        if (std::find(symbols.begin(), symbols.end(), dim) == symbols.end()) {
          symbols.push_back(dim);
        }
      }
    }
  };
  add(sig.inputs);
  add(sig.outputs);
  return symbols;
}

int64_t total_elements(const OpSignature& sig, const std::map<std::string, int64_t>& sizes) {
  int64_t total = 0;
  for (const auto* tensors : {&sig.inputs, &sig.outputs}) {
    for (const TensorSig& t : *tensors) {
      total += numel(shape_from_sizes(sig, t, sizes));
    }
  }
  return total;
}

int64_t work_estimate(const OpSignature& sig, const std::map<std::string, int64_t>& sizes) {
  int64_t work = 1;
  for (const std::string& dim : size_symbols(sig)) {
    work *= size_of(sig, dim, sizes);
  }
  return work;
}

}  // namespace kcv::gen
