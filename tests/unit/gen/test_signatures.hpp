// File: tests/unit/gen/test_signatures.hpp
// Hand-written op signatures shaped like the op table's, so the generator tests do not depend
// on src/oracle (which comes after src/gen in the link order).
#pragma once

#include "kcv/op.hpp"

namespace kcv::testing {

inline OpSignature binary_sig(ValueDomain second = ValueDomain::kAny) {
  OpSignature s;
  s.name = "add";
  s.inputs = {{"x", {"M", "N"}, ValueDomain::kAny}, {"y", {"M", "N"}, second}};
  s.outputs = {{"out", {"M", "N"}, ValueDomain::kAny}};
  s.reference_sizes = {{"M", 16}, {"N", 1024}};
  return s;
}

inline OpSignature unary_sig(ValueDomain domain) {
  OpSignature s;
  s.name = "sqrt";
  s.inputs = {{"x", {"M", "N"}, domain}};
  s.outputs = {{"out", {"M", "N"}, ValueDomain::kAny}};
  s.reference_sizes = {{"M", 16}, {"N", 1024}};
  return s;
}

inline OpSignature softmax_sig() {
  OpSignature s;
  s.name = "softmax";
  s.op_class = OpClass::kNormalization;
  s.inputs = {{"x", {"M", "N"}, ValueDomain::kAny}};
  s.outputs = {{"out", {"M", "N"}, ValueDomain::kAny}};
  s.reference_sizes = {{"M", 16}, {"N", 1024}};
  s.reduction_dim = "N";
  return s;
}

inline OpSignature matmul_sig() {
  OpSignature s;
  s.name = "matmul";
  s.op_class = OpClass::kMatmul;
  s.inputs = {{"a", {"M", "K"}, ValueDomain::kAny}, {"b", {"K", "N"}, ValueDomain::kAny}};
  s.outputs = {{"out", {"M", "N"}, ValueDomain::kAny}};
  s.reference_sizes = {{"M", 32}, {"K", 256}, {"N", 32}};
  s.reduction_dim = "K";
  return s;
}

inline OpSignature conv2d_sig() {
  OpSignature s;
  s.name = "conv2d";
  s.op_class = OpClass::kConvolution;
  s.inputs = {{"x", {"B", "C", "H", "W"}, ValueDomain::kAny}, {"w", {"O", "C", "R", "S"}, ValueDomain::kAny}};
  s.outputs = {{"out", {"B", "O", "H", "W"}, ValueDomain::kAny}};
  s.reference_sizes = {{"B", 1}, {"C", 4}, {"H", 16}, {"W", 16}, {"O", 4}, {"R", 3}, {"S", 3}};
  s.reduction_dim = "C";
  return s;
}

}  // namespace kcv::testing
