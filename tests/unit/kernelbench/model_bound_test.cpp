// File: tests/unit/kernelbench/model_bound_test.cpp
// The error scale E of the module bound: the worst eager error over elements finite in both,
// floored at one output rounding of the RMS; exact zeros of both are not informative; and the
// two no-claim rules.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kcv/kernelbench.hpp"

namespace kcv::kb {
namespace {

TEST(EagerScale, WorstFiniteErrorFlooredAtOneRounding) {
  const std::vector<double> y = {1.0, -2.0, 0.0, std::numeric_limits<double>::infinity()};
  const HostTensor eager = make_tensor(DType::kF32, {4}, {1.0 + 0x1p-20, -2.0, 0.0, 1.0});
  const EagerScale s = eager_scale(DType::kF32, y, eager);
  EXPECT_DOUBLE_EQ(s.e, 0x1p-20);
  EXPECT_EQ(s.informative, 2);  // the exact zero of both and the non-finite y* do not count
  const HostTensor exact = make_tensor(DType::kF32, {4}, {1.0, -2.0, 0.0, 1.0});
  const double rms = std::sqrt((1.0 + 4.0 + 0.0) / 3.0);
  EXPECT_DOUBLE_EQ(eager_scale(DType::kF32, y, exact).e, 0x1p-24 * rms);
}

TEST(EagerScale, IntegerOutputsAreExact) {
  const HostTensor eager = make_tensor(DType::kI64, {2}, {3, 4});
  EXPECT_EQ(eager_scale(DType::kI64, {3, 5}, eager).e, 0.0);
}

TEST(NoClaim, WhenEagerIsLostOrLooserThanKernelBench) {
  EXPECT_EQ(no_claim_reason(1e-6, 1.0), "");
  EXPECT_NE(no_claim_reason(0.1, 1.0), "");   // eager off by a tenth of the output
  EXPECT_EQ(no_claim_reason(1e-2, 1e3), "");  // 4E = 0.04 within allclose's 1e-2 (1 + 1e3)
  EXPECT_NE(no_claim_reason(1e-2, 0.5), "");  // 4E = 0.04 > 0.015: looser than allclose
}

}  // namespace
}  // namespace kcv::kb
