// File: glr/tests/error_model_test.cpp
// The pieces of the GLR error model (include/kcv/glr/error_model.hpp) and of the precision
// contract (precision.hpp) on hand-made numbers: the documented tau formula, the per-slice
// scale, N and G, RN-even rounding, and dg's terms against the reference's own dg.
#include "kcv/glr/error_model.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kcv/glr/chunked.hpp"
#include "support/problems.hpp"

namespace kcv::glr {
namespace {

Shape shape(std::int64_t tokens, std::int64_t heads, std::int64_t k, std::int64_t v,
            std::vector<std::int64_t> cu = {}) {
  Shape s;
  s.tokens = tokens;
  s.qk_heads = heads;
  s.v_heads = heads;
  s.key_dim = k;
  s.value_dim = v;
  s.cu_seqlens = std::move(cu);
  return s;
}

TEST(PrecisionContract, RoundsToNearestEvenAndKnowsWhatIsExact) {
  EXPECT_EQ(round_to(Rounding::kBf16, 1.0f + 0x1p-8f), 1.0f);  // tie to even
  EXPECT_EQ(round_to(Rounding::kBf16, 1.0f + 0x1p-8f + 0x1p-20f), 1.0f + 0x1p-7f);
  EXPECT_EQ(round_to(Rounding::kBf16, 1.0f + 3 * 0x1p-8f), 1.0f + 0x1p-6f);  // tie up to even
  EXPECT_EQ(round_to(Rounding::kTf32, 1.0f + 0x1p-12f), 1.0f);
  EXPECT_EQ(round_to(Rounding::kNone, 1.0f + 0x1p-20f), 1.0f + 0x1p-20f);
  EXPECT_TRUE(std::isnan(round_to(Rounding::kBf16, NAN)));
  EXPECT_TRUE(representable(Rounding::kBf16, 1.5));
  EXPECT_FALSE(representable(Rounding::kBf16, 1.0 + 0x1p-9));
  EXPECT_TRUE(representable(Rounding::kTf32, 1.0 + 0x1p-9));
  EXPECT_FALSE(representable(Rounding::kNone, 0.1));  // not even an fp32 value
  EXPECT_EQ(unit_roundoff(Rounding::kBf16), 0x1p-8);
  EXPECT_EQ(unit_roundoff(Rounding::kTf32), 0x1p-11);
}

TEST(PrecisionContract, GradesDeclareEveryOperandOrNone) {
  const PrecisionContract bf16 = contract_for(Grade::kBf16), fp32 = contract_for(Grade::kFp32);
  for (OperandRounding r : bf16.products)
    EXPECT_TRUE(r.a == Rounding::kBf16 && r.b == Rounding::kBf16);
  for (OperandRounding r : fp32.products)
    EXPECT_TRUE(r.a == Rounding::kNone && r.b == Rounding::kNone);
  EXPECT_EQ(bf16.u_addend, Rounding::kBf16);
  EXPECT_EQ(bf16.state_carry, Rounding::kNone);
  EXPECT_TRUE(bf16.rounds_backward());
  EXPECT_FALSE(fp32.rounds_backward());
  EXPECT_EQ(name(Product::kStateUpdate), "state_update");
  EXPECT_EQ(name(Product::kSolveVjp), "solve_vjp");
}

TEST(ErrorModel, TauIsTheDocumentedFormula) {
  const Shape s = shape(4, 1, 2, 2);
  const std::vector<double> ref(8, 2.0);
  const ModelScale m{4 + 2 + 2 + 64, 0.0};
  const std::vector<double> sigma(8, 1e-3);
  const auto t = tau(Output::kO, ref, s, 0, m, 0x1p-8, {}, sigma);
  ASSERT_TRUE(t);
  const double want = 0x1p-8 * 2.0 + 4 * 0x1p-24 * std::sqrt(72.0) * 2 * 2.0 + 4 * 1e-3;
  for (double x : *t) EXPECT_DOUBLE_EQ(x, want);
  EXPECT_FALSE(tau(Output::kO, std::vector<double>(7, 1.0), s, 0, m, 0x1p-8));
  EXPECT_FALSE(tau(Output::kDq, ref, s, 0, m, 0x1p-8, std::vector<double>(8, 1.0)));
}

TEST(ErrorModel, SliceScaleIsPerSequenceAndHead) {
  Shape s = shape(4, 2, 1, 1, {0, 2, 4});
  std::vector<double> ref(8, 0.0);  // [T, HV, V]
  ref[0] = ref[2] = 3.0;            // sequence 0, head 0
  ref[5] = ref[7] = 4.0;            // sequence 1, head 1
  ref[6] = NAN;                     // left out of its slice's RMS
  const std::vector<double> sc = slice_scale(Output::kO, ref, s, 0);
  EXPECT_EQ(sc[0], 6.0);
  EXPECT_EQ(sc[1], 0.0);
  EXPECT_EQ(sc[7], 8.0);
  EXPECT_EQ(sc[4], 0.0);
}

TEST(ErrorModel, ScaleCountsTheLongestSequenceAndTheLargestChunkDecay) {
  Problem p;
  p.shape = shape(130, 1, 2, 3, {0, 100, 130});
  p.g.assign(130, -0.5);
  const ModelScale m = model_scale(p);
  EXPECT_EQ(m.depth, 100 + 2 + 3 + 64);
  EXPECT_DOUBLE_EQ(m.log_decay, 32.0);
  EXPECT_DOUBLE_EQ(accumulation_term(m), 4 * 0x1p-24 * (std::sqrt(169.0) + 32.0));
}

class DgTermsSum : public ::testing::TestWithParam<Member> {};

TEST_P(DgTermsSum, ToTheReferenceDgAndBoundIt) {
  testing::ProblemSpec spec;
  spec.lengths = {1, 2, 67, 70};
  spec.v_heads = 2;
  spec.key_dim = 16;
  spec.value_dim = 8;
  const testing::Case c = testing::make_case(GetParam(), spec);
  const Expected<Gradients> ref = chunked_backward(GetParam(), c.problem, c.cot);
  const Expected<DgTerms> t = dg_terms(GetParam(), c.problem, c.cot);
  ASSERT_TRUE(ref && t);
  ASSERT_EQ(t->total.size(), ref->dg.size());
  for (std::size_t i = 0; i < t->total.size(); ++i) {
    EXPECT_NEAR(t->total[i], ref->dg[i], 1e-9 * (1 + t->scale[i])) << i;
    EXPECT_GE(t->scale[i], std::fabs(ref->dg[i]) * (1 - 1e-12)) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(ScalarAndChannelGates, DgTermsSum,
                         ::testing::Values(Member::kSimpleGla, Member::kGla,
                                           Member::kGatedDeltaNet));

}  // namespace
}  // namespace kcv::glr
