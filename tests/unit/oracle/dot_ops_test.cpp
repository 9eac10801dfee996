// File: tests/unit/oracle/dot_ops_test.cpp
// matmul, bmm, conv1d, conv2d and cumsum against hand-computed small cases; the TF32 permission
// of triton-default (bound and declared simulation); n_terms per element.
#include <gtest/gtest.h>

#include <cmath>

#include "oracle_test_util.hpp"

namespace kcv {
namespace {

using testing::contract_for;
using testing::eval1;

HostTensor t32(const Shape& s, std::vector<double> v) { return make_tensor(DType::kF32, s, v); }

TEST(OracleDotOps, MatmulHandCase) {
  // [1 2; 3 4] x [5 6; 7 8] = [19 22; 43 50]
  const auto out = eval1("matmul", {t32({2, 2}, {1, 2, 3, 4}), t32({2, 2}, {5, 6, 7, 8})},
                         contract_for("matmul", ProfileId::kStrict));
  EXPECT_EQ(out.value, (std::vector<double>{19, 22, 43, 50}));
  EXPECT_EQ(out.declared, out.value);
  EXPECT_EQ(out.n_terms, (std::vector<double>(4, 2.0)));
  EXPECT_EQ(out.shape, (Shape{2, 2}));
}

TEST(OracleDotOps, BmmHandCase) {
  // batch 0: [1 2] x [3; 4] = 11; batch 1: [-1 1] x [2; 5] = 3
  const auto out = eval1("bmm", {t32({2, 1, 2}, {1, 2, -1, 1}), t32({2, 2, 1}, {3, 4, 2, 5})},
                         contract_for("bmm", ProfileId::kStrict));
  EXPECT_EQ(out.value, (std::vector<double>{11, 3}));
  EXPECT_EQ(out.shape, (Shape{2, 1, 1}));
}

TEST(OracleDotOps, Conv1dHandCaseWithZeroPadding) {
  // x = [1 2 3 4], w = [1 10 100] (R = 3, padding 1):
  // out[l] = x[l-1] + 10 x[l] + 100 x[l+1]
  const auto out = eval1("conv1d", {t32({1, 1, 4}, {1, 2, 3, 4}), t32({1, 1, 3}, {1, 10, 100})},
                         contract_for("conv1d", ProfileId::kStrict));
  EXPECT_EQ(out.value, (std::vector<double>{210, 321, 432, 43}));
  EXPECT_EQ(out.n_terms, (std::vector<double>{2, 3, 3, 2}));
}

TEST(OracleDotOps, Conv1dSumsOverChannels) {
  // two channels, R = 1: out = 2*x0 + 3*x1
  const auto out = eval1("conv1d", {t32({1, 2, 2}, {1, 2, 10, 20}), t32({1, 2, 1}, {2, 3})},
                         contract_for("conv1d", ProfileId::kStrict));
  EXPECT_EQ(out.value, (std::vector<double>{32, 64}));
}

TEST(OracleDotOps, Conv2dHandCase) {
  // 3x3 input 1..9, 3x3 kernel of ones, padding 1: box sums.
  std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const auto out = eval1("conv2d", {t32({1, 1, 3, 3}, x), t32({1, 1, 3, 3}, std::vector<double>(9, 1))},
                         contract_for("conv2d", ProfileId::kStrict));
  EXPECT_EQ(out.value, (std::vector<double>{12, 21, 16, 27, 45, 33, 24, 39, 28}));
  EXPECT_EQ(out.n_terms[0], 4.0);
  EXPECT_EQ(out.n_terms[4], 9.0);
}

TEST(OracleDotOps, CumsumIsInclusiveWithGrowingLength) {
  const auto out = eval1("cumsum", {t32({2, 3}, {1, 2, 3, -1, -1, 5})},
                         contract_for("cumsum", ProfileId::kStrict));
  EXPECT_EQ(out.value, (std::vector<double>{1, 3, 6, -1, -2, 3}));
  EXPECT_EQ(out.n_terms, (std::vector<double>{1, 2, 3, 1, 2, 3}));
  EXPECT_LT(out.tau[0], out.tau[2]);
}

TEST(OracleDotOps, TritonDefaultAdmitsTf32AndSimulatesIt) {
  // a = 1 + 2^-20 is exact in fp32 but rounds to 1 in TF32 (11 significant bits).
  std::vector<HostTensor> in = {t32({1, 1}, {1 + 0x1p-20}), t32({1, 1}, {1})};
  const auto strict = eval1("matmul", in, contract_for("matmul", ProfileId::kCudaDefault));
  const auto triton = eval1("matmul", in, contract_for("matmul", ProfileId::kTritonDefault));
  EXPECT_EQ(strict.declared[0], 1 + 0x1p-20);
  EXPECT_EQ(triton.declared[0], 1.0);
  EXPECT_GT(triton.tau[0], 0x1p-20);  // the TF32 term admits the conversion error
  EXPECT_LT(strict.tau[0], 0x1p-20);
}

TEST(OracleDotOps, FloatProductsAreRoundedSixteenBitProductsAreNot) {
  // Identical values: f32 inputs pay the product rounding term, f16 inputs do not.
  const std::vector<double> a = {0.75, -1.25}, b = {1.5, 0.5};
  Contract c32 = contract_for("matmul", ProfileId::kStrict, DType::kF32);
  Contract c16 = contract_for("matmul", ProfileId::kStrict, DType::kF16);
  c16.output_dtypes = {DType::kF32};
  const auto o32 = eval1("matmul", {t32({1, 2}, a), t32({2, 1}, b)}, c32);
  const auto o16 = eval1("matmul", {make_tensor(DType::kF16, {1, 2}, a),
                                    make_tensor(DType::kF16, {2, 1}, b)}, c16);
  EXPECT_EQ(o32.value, o16.value);
  EXPECT_GT(o32.tau[0], o16.tau[0]);
}

}  // namespace
}  // namespace kcv
