// File: tests/unit/kernelbench/transforms_test.cpp
// A module probe's inputs are the reference's draw transformed: signs kept, values scaled or
// shifted as the distribution says, laid out as the probe's layout, specials injected; integer
// tensors keep the drawn values.
#include "kernelbench/transforms.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "gen/distributions.hpp"
#include "kcv/generate.hpp"
#include "kcv/rng.hpp"

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

// The draw's elements are copied, not passed through fp64 and back: the result is what the
// fp64 round trip gave, every raw byte, for draws holding signaling NaNs with payloads,
// subnormals, -0, int64 beyond 2^53 and bool bytes other than 0/1, in every layout, with
// injections.
TEST(TransformInputs, DrawnCopyIsTheFp64RoundTrip) {
  HostTensor f(DType::kF32, {3, 4});
  const uint32_t bits[] = {0x7F800123u, 0xFFC0BEEFu, 0x00000003u, 0x80000000u,
                           0x7F7FFFFFu, 0xBF800000u, 0x00800000u, 0x7F800000u};
  for (int64_t i = 0; i < 12; ++i) f.set_bits_at(i, bits[i % 8]);
  HostTensor h(DType::kBF16, {3, 4});
  for (int64_t i = 0; i < 12; ++i) h.set_bits_at(i, 0x7F81u + static_cast<uint64_t>(i) * 0x1111u);
  HostTensor l(DType::kI64, {5});
  for (int64_t i = 0; i < 5; ++i) l.set_bits_at(i, (uint64_t{1} << 53) + static_cast<uint64_t>(i));
  HostTensor b(DType::kBool, {4});
  for (int64_t i = 0; i < 4; ++i) b.set_bits_at(i, static_cast<uint64_t>(i * 3));
  const std::vector<HostTensor> drawn = {f, h, l, b};
  for (const Layout& layout :
       {Layout{}, Layout{LayoutKind::kTransposed, 2, 0, 0}, Layout{LayoutKind::kBroadcast, 2, 0, 0},
        Layout{LayoutKind::kPaddedRows, 2, 5, 3}}) {
    Probe p;
    p.seed = 9;
    p.inputs = {InputSpec{DType::kF32, Distribution::kDrawn, layout},
                InputSpec{DType::kBF16, Distribution::kDrawn, layout},
                InputSpec{DType::kI64, Distribution::kDrawn, layout},
                InputSpec{DType::kBool, Distribution::kDrawn, layout}};
    p.injections = {Injection{0, 5, Special::kSubnormal}, Injection{1, 0, Special::kNegZero}};
    const auto out = transform_inputs(p, drawn);
    ASSERT_EQ(out.size(), drawn.size());
    for (std::size_t j = 0; j < drawn.size(); ++j) {
      const Layout lj = is_floating(drawn[j].dtype()) ? layout : Layout{};
      HostTensor want = make_with_layout(drawn[j].dtype(), drawn[j].shape(), lj, drawn[j].to_f64());
      for (const Injection& inj : p.injections)
        if (inj.input == static_cast<int>(j))
          want.set_value_at(inj.index, special_value(inj.value, drawn[j].dtype()));
      ASSERT_EQ(out[j].raw().size(), want.raw().size());
      EXPECT_EQ(std::memcmp(out[j].raw().data(), want.raw().data(), want.raw().size()), 0)
          << j << " " << layout_name(layout.kind);
    }
    EXPECT_EQ(out[0].bits_at(0), 0x7FC00123u);  // the signaling NaN comes back quiet
  }
}

// A large input (over gates::kParallelFrom elements) is read, transformed and written on
// threads by index ranges; every byte is what the serial path gives: the whole draw converted,
// transformed (gen::transform_values) or drawn afresh (gen::draw_value), then laid out.
TEST(TransformInputs, ALargeInputIsTheSerialPathsBytesForEveryDistribution) {
  const int64_t n = (int64_t{1} << 20) + 333;
  HostTensor drawn(DType::kBF16, {n});
  const CounterRng base(17, 3);
  for (int64_t i = 0; i < n; ++i) drawn.set_value_at(i, base.normal(static_cast<uint64_t>(i), 0));
  drawn.set_bits_at(12345, 0x7F81u);  // a signaling NaN: quieted alike on both paths
  for (const Distribution dist : all_distributions()) {
    Probe p;
    p.seed = 23;
    p.inputs = {InputSpec{DType::kBF16, dist, {}}};
    const HostTensor got = transform_inputs(p, {drawn})[0];
    std::vector<double> values;
    const CounterRng rng(p.seed, uint64_t{1} << 32);
    if (dist == Distribution::kDrawn) {
      values = drawn.to_f64();
    } else if (is_transform(dist)) {
      values = drawn.to_f64();
      gen::transform_values(dist, DType::kBF16, rng, values);
    } else {
      for (int64_t i = 0; i < n; ++i)
        values.push_back(gen::draw_value(dist, DType::kBF16, rng, static_cast<uint64_t>(i)));
    }
    const HostTensor want = make_with_layout(DType::kBF16, {n}, Layout{}, values);
    ASSERT_EQ(got.raw().size(), want.raw().size());
    EXPECT_EQ(std::memcmp(got.raw().data(), want.raw().data(), want.raw().size()), 0)
        << distribution_name(dist);
  }
}

TEST(TransformInputs, ALargeInputIsTheSerialPathsBytesInEveryLayout) {
  // 1025 x 1031 elements: past the threads' threshold, rows and columns not multiples of a chunk
  const Shape shape = {1025, 1031};
  HostTensor drawn(DType::kF16, shape);
  const CounterRng base(5, 9);
  for (int64_t i = 0; i < drawn.numel(); ++i)
    drawn.set_value_at(i, base.normal(static_cast<uint64_t>(i), 0));
  drawn.set_bits_at(777, 0x7C01u);  // a signaling NaN: quieted alike on both paths
  for (const Layout& layout : layout_plan(shape)) {
    Probe p;
    p.inputs = {InputSpec{DType::kF16, Distribution::kDrawn, layout}};
    const HostTensor got = transform_inputs(p, {drawn})[0];
    const HostTensor want = make_with_layout(drawn, layout);  // one serial pass
    ASSERT_EQ(got.strides(), want.strides()) << layout_name(layout.kind);
    ASSERT_EQ(got.raw().size(), want.raw().size());
    EXPECT_EQ(std::memcmp(got.raw().data(), want.raw().data(), want.raw().size()), 0)
        << layout_name(layout.kind);
  }
}

}  // namespace
}  // namespace kcv::kb
