// File: tests/unit/kernelbench/transforms_test.cpp
// A module probe's inputs are the reference's draw transformed: signs kept, values scaled or
// shifted as the distribution says, laid out as the probe's layout, specials injected; integer
// tensors keep the drawn values.
#include "kernelbench/transforms.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace kcv::kb {
namespace {

Probe probe_with(Distribution d) {
  Probe p;
  p.seed = 5;
  p.inputs = {InputSpec{DType::kF32, d, {}}, InputSpec{DType::kI64, d, {}}};
  return p;
}

const std::vector<HostTensor> kDrawn = {make_tensor(DType::kF32, {2, 3}, {1, -2, 3, -4, 5, -6}),
                                        make_tensor(DType::kI64, {3}, {7, 8, 9})};

TEST(TransformInputs, DrawnIsTheDrawItself) {
  const auto out = transform_inputs(probe_with(Distribution::kDrawn), kDrawn);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].to_f64(), kDrawn[0].to_f64());
  EXPECT_EQ(out[1].to_f64(), kDrawn[1].to_f64());
}

TEST(TransformInputs, ScalingsKeepSignsAndLeaveIntegersAlone) {
  const auto out = transform_inputs(probe_with(Distribution::kLargeScaled), kDrawn);
  EXPECT_EQ(out[0].to_f64(), (std::vector<double>{128, -256, 384, -512, 640, -768}));
  EXPECT_EQ(out[1].to_f64(), kDrawn[1].to_f64());
  const auto sub = transform_inputs(probe_with(Distribution::kSubnormalScaled), kDrawn);
  EXPECT_EQ(sub[0].value_at(0), std::ldexp(1.0, -130));
  const auto pareto = transform_inputs(probe_with(Distribution::kParetoScaled), kDrawn);
  for (int64_t i = 0; i < 6; ++i) {
    const double x = kDrawn[0].value_at(i), y = pareto[0].value_at(i);
    EXPECT_GE(std::fabs(y), std::fabs(x) * (1 - 1e-7));
    EXPECT_EQ(std::signbit(x), std::signbit(y));
  }
}

TEST(TransformInputs, ShiftedMeanAddsAThousandRms) {
  const auto out = transform_inputs(probe_with(Distribution::kShiftedMean), kDrawn);
  const double rms = std::sqrt((1 + 4 + 9 + 16 + 25 + 36) / 6.0);
  EXPECT_NEAR(out[0].value_at(0), 1 + 1024 * rms, 1e-3);
}

TEST(TransformInputs, LayoutAndInjections) {
  Probe p = probe_with(Distribution::kDrawn);
  p.inputs[0].layout = Layout{LayoutKind::kTransposed, 2, 0, 0};
  p.injections = {Injection{0, 4, Special::kNaN},
                  Injection{0, 99, Special::kNaN}};  // 99: past the end
  const auto out = transform_inputs(p, kDrawn);
  EXPECT_FALSE(out[0].is_contiguous());
  EXPECT_EQ(out[0].value_at(1), -2.0);  // the logical values are the drawn ones
  EXPECT_TRUE(std::isnan(out[0].value_at(4)));
}

}  // namespace
}  // namespace kcv::kb
