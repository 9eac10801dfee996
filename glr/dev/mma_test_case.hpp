// File: glr/dev/mma_test_case.hpp
// The parameter of the tensor-core kernels' tests (glr_dev_tests): a labelled member and problem
// at the kernels' sizes, K = V = 128; glr_dev_check builds its cases with mma_spec too.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "glr/dev/chunked_mma_forward.hpp"
#include "support/problems.hpp"

namespace kcv::glr::dev {

struct MmaTestCase {
  std::string label;
  Member member;
  testing::ProblemSpec spec;
};

/// Sequences of `lengths` tokens, h q/k heads and hv value heads, K = V = 128, from `seed`.
inline testing::ProblemSpec mma_spec(std::vector<std::int64_t> lengths, std::int64_t h,
                                     std::int64_t hv, std::uint64_t seed) {
  testing::ProblemSpec s;
  s.lengths = std::move(lengths);
  s.qk_heads = h;
  s.v_heads = hv;
  s.key_dim = kMmaDim;
  s.value_dim = kMmaDim;
  s.seed = seed;
  return s;
}

}  // namespace kcv::glr::dev
