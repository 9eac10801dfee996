// File: tests/unit/oracle/oracle_test_util.hpp
// Small helpers for the oracle tests: contracts by profile, evaluation by op name, seeded inputs.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "kcv/op.hpp"
#include "kcv/rng.hpp"

namespace kcv::testing {

inline Contract contract_for(std::string op, ProfileId p, DType in = DType::kF32,
                             DType acc = DType::kF32) {
  Contract c;
  c.op = std::move(op);
  c.profile = p;
  c.input_dtypes = {in};
  c.accumulator = acc;
  return c;
}

inline OracleOutput eval1(const std::string& op, const std::vector<HostTensor>& inputs,
                          const Contract& c) {
  const Op* o = find_op(op);
  EXPECT_NE(o, nullptr) << op;
  if (o == nullptr) return {};
  OracleResult r = o->evaluate(inputs, c);
  EXPECT_EQ(r.outputs.size(), 1u) << op;
  return r.outputs.empty() ? OracleOutput{} : r.outputs[0];
}

/// Standard normal values rounded to dtype, from CounterRng(seed, stream).
inline HostTensor normal_tensor(DType t, const Shape& shape, uint64_t seed, uint64_t stream) {
  CounterRng rng(seed, stream);
  std::vector<double> v(static_cast<std::size_t>(numel(shape)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = rng.normal(i);
  return make_tensor(t, shape, v);
}

}  // namespace kcv::testing
