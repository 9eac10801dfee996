// File: tests/unit/oracle/normalization_test.cpp
// softmax, log_softmax, layernorm, rmsnorm: hand values, the non-finite row rules, and bounds
// that are positive, finite and cover the declared-type simulation.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "oracle_test_util.hpp"

namespace kcv {
namespace {

using testing::contract_for;
using testing::eval1;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

HostTensor row(std::vector<double> v, DType t = DType::kF32) {
  return make_tensor(t, {1, static_cast<int64_t>(v.size())}, v);
}

HostTensor vec(std::vector<double> v) {
  return make_tensor(DType::kF32, {static_cast<int64_t>(v.size())}, v);
}

OracleOutput softmax(const std::string& op, std::vector<double> x, ProfileId p = ProfileId::kStrict) {
  return eval1(op, {row(std::move(x))}, contract_for(op, p));
}

TEST(OracleNormalization, SoftmaxHandValues) {
  const auto s = softmax("softmax", {0, 0});
  EXPECT_EQ(s.value, (std::vector<double>{0.5, 0.5}));
  const auto t = softmax("softmax", {1, 2, 3});
  const double z = std::exp(-2.0) + std::exp(-1.0) + 1.0;
  EXPECT_DOUBLE_EQ(t.value[2], 1.0 / z);
  EXPECT_DOUBLE_EQ(t.value[0], std::exp(-2.0) / z);
  EXPECT_EQ(t.n_terms[0], 3.0);
  const auto l = softmax("log_softmax", {1, 2, 3});
  EXPECT_DOUBLE_EQ(l.value[2], -std::log(z));
}

TEST(OracleNormalization, SoftmaxNonFiniteRows) {
  for (const std::string op : {"softmax", "log_softmax"}) {
    for (const auto& x : {std::vector<double>{1, kNaN, 2}, std::vector<double>{-kInf, -kInf},
                          std::vector<double>{1, kInf}}) {
      const auto out = softmax(op, x);
      for (std::size_t i = 0; i < x.size(); ++i) {
        EXPECT_TRUE(std::isnan(out.value[i])) << op << " element " << i;
        EXPECT_EQ(out.tau[i], 0.0);
      }
    }
  }
  const auto masked = softmax("softmax", {-kInf, 0});
  EXPECT_EQ(masked.value, (std::vector<double>{0, 1}));
  EXPECT_EQ(softmax("log_softmax", {-kInf, 0}).value[0], -kInf);
}

TEST(OracleNormalization, SoftmaxBoundCoversDeclaredAndGrowsUnderFastMath) {
  std::vector<double> x;
  for (int i = 0; i < 64; ++i) x.push_back(0.37 * i - 11);
  const auto strict = softmax("softmax", x);
  const auto cuda = softmax("softmax", x, ProfileId::kCudaDefault);
  const auto fast = softmax("softmax", x, ProfileId::kFastMath);
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_GT(strict.tau[i], 0.0);
    EXPECT_LE(std::fabs(strict.declared[i] - strict.value[i]), strict.tau[i]) << i;
    // Same accumulation model; expf's 2 ulp against __expf's 2 + 1.173|x - max| ulp.
    EXPECT_GT(fast.tau[i], cuda.tau[i]) << i;
  }
}

TEST(OracleNormalization, LayerNormHandValues) {
  // x = [1,2,3,4]: mean 2.5, var 1.25; with w = [1,2,1,1], b = [0,0,0,1].
  Contract c = contract_for("layernorm", ProfileId::kStrict);
  c.params["eps"] = 0.0;
  const auto out = eval1("layernorm", {row({1, 2, 3, 4}), vec({1, 2, 1, 1}), vec({0, 0, 0, 1})}, c);
  const double s = std::sqrt(1.25);
  EXPECT_DOUBLE_EQ(out.value[0], -1.5 / s);
  EXPECT_DOUBLE_EQ(out.value[1], 2 * -0.5 / s);
  EXPECT_DOUBLE_EQ(out.value[3], 1.5 / s + 1);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_GT(out.tau[i], 0.0);
    EXPECT_LE(std::fabs(out.declared[i] - out.value[i]), out.tau[i]);
  }
}

TEST(OracleNormalization, LayerNormRowWithInfinityIsNan) {
  const auto out = eval1("layernorm", {row({1, kInf, 3}), vec({1, 1, 1}), vec({0, 0, 0})},
                         contract_for("layernorm", ProfileId::kStrict));
  for (double v : out.value) EXPECT_TRUE(std::isnan(v));
}

TEST(OracleNormalization, RmsNormHandValues) {
  // x = [3, 4]: mean of squares 12.5.
  const auto out = eval1("rmsnorm", {row({3, 4}), vec({1, 0.5})},
                         contract_for("rmsnorm", ProfileId::kStrict));
  const double r = 1 / std::sqrt(12.5 + 1e-6);
  EXPECT_DOUBLE_EQ(out.value[0], 3 * r);
  EXPECT_DOUBLE_EQ(out.value[1], 4 * r * 0.5);
  EXPECT_LE(std::fabs(out.declared[1] - out.value[1]), out.tau[1]);
}

}  // namespace
}  // namespace kcv
