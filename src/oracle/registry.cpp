// File: src/oracle/registry.cpp
// The one registry of oracle ops (built once, on first use, in op-table order) and the public
// helpers that resolve a contract against a signature. Dtype lists in a contract may be shorter
// than the op's tensor list: missing entries repeat the last one given, so ["f16"] means every
// input is f16 (weights and biases included). Ops of a library outside this module (the GLR
// ops of glr/verify) join through register_op, after the built-in ones; they are never removed.
#include <algorithm>
#include <mutex>

#include "kcv/op.hpp"
#include "oracle/families.hpp"

namespace kcv {

namespace {

const oracle::OpList& registry() {
  static const oracle::OpList kOps = [] {
    oracle::OpList ops;
    oracle::add_elementwise_ops(ops);
    oracle::add_reduction_ops(ops);
    oracle::add_normalization_ops(ops);
    oracle::add_matmul_ops(ops);
    oracle::add_scan_ops(ops);
    oracle::add_conv_ops(ops);
    return ops;
  }();
  return kOps;
}

// Ops registered at run time, in registration order. Never shrinks, so pointers stay valid.
struct Registered {
  std::mutex mutex;
  std::vector<std::unique_ptr<Op>> ops;
};

Registered& registered() {
  static Registered r;
  return r;
}

std::vector<const Op*> every_op() {
  std::vector<const Op*> out;
  for (const auto& op : registry()) out.push_back(op.get());
  Registered& r = registered();
  const std::lock_guard lock(r.mutex);
  for (const auto& op : r.ops) out.push_back(op.get());
  return out;
}

std::vector<DType> resolve(const std::vector<DType>& given, std::size_t n, DType fallback) {
  std::vector<DType> out;
  for (std::size_t i = 0; i < n; ++i) {
    if (given.empty()) {
      out.push_back(fallback);
    } else {
      out.push_back(given[std::min(i, given.size() - 1)]);
    }
  }
  return out;
}

}  // namespace

std::optional<double> Op::evaluate_exact(std::span<const HostTensor>, const Contract&, int,
                                         int64_t) const {
  return std::nullopt;
}

std::vector<std::optional<double>> Op::evaluate_exact_many(std::span<const HostTensor> inputs,
                                                           const Contract& contract, int output,
                                                           std::span<const int64_t> indices) const {
  std::vector<std::optional<double>> out;
  out.reserve(indices.size());
  for (int64_t i : indices) out.push_back(evaluate_exact(inputs, contract, output, i));
  return out;
}

const Op* find_op(std::string_view name) {
  for (const Op* op : every_op()) {
    if (op->signature().name == name) return op;
  }
  return nullptr;
}

std::vector<const Op*> all_ops() { return every_op(); }

std::vector<std::string> op_names() {
  std::vector<std::string> out;
  for (const Op* op : every_op()) out.push_back(op->signature().name);
  return out;
}

Status register_op(std::unique_ptr<Op> op) {
  if (op == nullptr) return make_error(ErrorCode::kInvalidArgument, "register_op: no op");
  const std::string name = op->signature().name;
  if (name.empty()) return make_error(ErrorCode::kInvalidArgument, "register_op: op has no name");
  if (find_op(name) != nullptr) {
    return make_error(ErrorCode::kInvalidArgument, "register_op: op '" + name + "' exists");
  }
  Registered& r = registered();
  const std::lock_guard lock(r.mutex);
  r.ops.push_back(std::move(op));
  return {};
}

Shape shape_of(const TensorSig& sig, const std::map<std::string, int64_t>& sizes) {
  Shape shape;
  for (const std::string& d : sig.dims) {
    const auto it = sizes.find(d);
    shape.push_back(it == sizes.end() ? 0 : it->second);
  }
  return shape;
}

std::map<std::string, double> merged_params(const OpSignature& sig, const Contract& contract) {
  std::map<std::string, double> out = sig.default_params;
  for (const auto& [k, v] : contract.params) out[k] = v;
  return out;
}

std::vector<DType> input_dtypes(const OpSignature& sig, const Contract& contract) {
  return resolve(contract.input_dtypes, sig.inputs.size(), DType::kF32);
}

std::vector<DType> output_dtypes(const OpSignature& sig, const Contract& contract) {
  if (sig.index_output) return std::vector<DType>(sig.outputs.size(), DType::kI64);
  const std::vector<DType> in = input_dtypes(sig, contract);
  return resolve(contract.output_dtypes, sig.outputs.size(), in.empty() ? DType::kF32 : in[0]);
}

Expected<std::map<std::string, int64_t>> bind_sizes(const OpSignature& sig,
                                                    std::span<const HostTensor> inputs) {
  if (inputs.size() != sig.inputs.size()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "op '" + sig.name + "' takes " + std::to_string(sig.inputs.size()) +
                          " inputs, got " + std::to_string(inputs.size()));
  }
  std::map<std::string, int64_t> sizes;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorSig& ts = sig.inputs[i];
    const Shape& shape = inputs[i].shape();
    if (shape.size() != ts.dims.size()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "input '" + ts.name + "' of op '" + sig.name + "' has rank " +
                            std::to_string(shape.size()) + ", expected " +
                            std::to_string(ts.dims.size()));
    }
    for (std::size_t d = 0; d < shape.size(); ++d) {
      const auto [it, fresh] = sizes.emplace(ts.dims[d], shape[d]);
      if (!fresh && it->second != shape[d]) {
        return make_error(ErrorCode::kInvalidArgument,
                          "input '" + ts.name + "' of op '" + sig.name + "': size " +
                              ts.dims[d] + " is " + std::to_string(shape[d]) + " here but " +
                              std::to_string(it->second) + " elsewhere");
      }
    }
  }
  for (const auto& [sym, n] : sig.reference_sizes) sizes.emplace(sym, n);  // e.g. output-only
  return sizes;
}

}  // namespace kcv
