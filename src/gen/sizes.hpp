// File: src/gen/sizes.hpp
// Size-symbol helpers the generators need before the oracle module exists in the link order
// (op.hpp's shape_of lives in src/oracle, which comes after src/gen).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kcv/contract.hpp"
#include "kcv/op.hpp"

namespace kcv::gen {

/// Shape of one tensor of `sig` under `sizes`; a symbol missing from `sizes` takes the
/// signature's reference size, and 1 when it has none.
Shape shape_from_sizes(const OpSignature& sig, const TensorSig& t, const std::map<std::string, int64_t>& sizes);

/// The signature's reference sizes overridden by the contract's.
std::map<std::string, int64_t> reference_sizes(const OpSignature& sig, const Contract& contract);

/// Size symbols in order of first appearance over inputs, then outputs.
std::vector<std::string> size_symbols(const OpSignature& sig);

/// Sum of the element counts of every input and output.
int64_t total_elements(const OpSignature& sig, const std::map<std::string, int64_t>& sizes);

/// Product of all size symbols: bounds the multiply-adds of every op in the table
/// (M*N elementwise, M*K*N matmul, B*O*L*C*R convolution).
int64_t work_estimate(const OpSignature& sig, const std::map<std::string, int64_t>& sizes);

}  // namespace kcv::gen
