// File: glr/tests/precision_contract_test.cpp
// The declared precision contract's bound (error_model.hpp) against CPU emulations that round
// exactly what a contract declares (support/precision_emulation.hpp), for every member over
// the cases of support/precision_cases.hpp (T ∈ {1, 63, 64, 65, 200, 1000}, varlen, GVA, strong
// decay), on bf16 inputs:
//  * each of three contracts passes the emulation that rounds exactly its declared operands:
//    the bf16 grade, the fp32 grade, and "chain fp32" (bf16 operands for the intra-chunk products
//    A^qk, L, T and A^qk·Δ, fp32 for every product the carried state depends on);
//  * the fp32 grade fails the bf16-grade emulation;
//  * one rounding more than declared fails: the state stored in bf16 across chunks, or the state
//    cast to bf16 before W·S and Q̄·S, under the fp32 grade and under chain fp32 (the cast under
//    chain fp32 from the second chunk on; the cast not under strong decay with a gate, where the
//    state reaches o with weight e^{−50·t}).
// Under the bf16 grade a bf16 state carry is measured and printed, not asserted: that contract
// already rounds S before W·S and Δ before K̄ᵀΔ, which for the delta rule put as much error into
// the state per chunk as a bf16 carry does (docs/glr/precision-contract.md §5).
// Worst ratios err/tau per case are printed and recorded as gtest properties.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "kcv/glr/chunked.hpp"
#include "kcv/glr/error_model.hpp"
#include "support/precision_cases.hpp"
#include "support/precision_emulation.hpp"
#include "support/problems.hpp"

namespace kcv::glr {
namespace {

using testing::ProblemSpec;
using testing::Scenario;
using testing::scenarios;
using testing::worst_ratio;

struct Ratio {
  double o = 0, ht = 0;
  double worst() const { return std::max(o, ht); }
};

PrecisionContract custom(PrecisionContract c) {
  c.grade = Grade::kCustom;
  return c;
}

// bf16 operands for the intra-chunk products only; everything the carried state depends on
// (W, U, W·S, K̄ᵀΔ, Q̄·S) in fp32.
PrecisionContract chain_fp32() {
  PrecisionContract c = contract_for(Grade::kCustom);
  for (Product p : {Product::kGramQK, Product::kGramKK, Product::kSolve, Product::kOutputIntra})
    c[p] = {Rounding::kBf16, Rounding::kBf16};
  return c;
}

PrecisionContract plus_carry(PrecisionContract c) {
  c.state_carry = Rounding::kBf16;
  return custom(c);
}

PrecisionContract plus_state_cast(PrecisionContract c) {
  c[Product::kStateW].b = Rounding::kBf16;
  c[Product::kOutputInter].b = Rounding::kBf16;
  return custom(c);
}

struct Param {
  Member member;
  Scenario scenario;
};

std::vector<Param> params() {
  std::vector<Param> out;
  for (Member m : kAllMembers)
    for (const Scenario& s : scenarios()) out.push_back({m, s});
  return out;
}

void PrintTo(const Param& p, std::ostream* os) {
  *os << testing::describe(p.member, p.scenario.spec);
}

class PrecisionContractBound : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    const Param& p = GetParam();
    problem_ = testing::kernel_inputs(testing::make_case(p.member, p.scenario.spec).problem);
    Expected<Outputs> ref = chunked_forward(p.member, problem_);
    ASSERT_TRUE(ref) << ref.error().to_string();
    ref_ = std::move(*ref);
  }

  // Worst err/tau of the emulation of `emulated` judged under `declared`; printed and recorded.
  Ratio judge(const char* label, const PrecisionContract& emulated,
              const PrecisionContract& declared) {
    const Member m = GetParam().member;
    const Outputs got = testing::emulate_forward(m, problem_, emulated);
    Expected<ForwardBounds> b = forward_bounds(m, problem_, ref_, declared);
    EXPECT_TRUE(b) << (b ? "" : b.error().to_string());
    if (!b) return {};
    const Ratio r{worst_ratio(got.o, ref_.o, b->o),
                  worst_ratio(got.final_state, ref_.final_state, b->final_state)};
    char text[64];
    std::snprintf(text, sizeof text, "o %.3g ht %.3g", r.o, r.ht);
    RecordProperty(label, text);
    std::printf("%-9s %-7s %-20s %s\n", std::string(name(m)).c_str(),
                GetParam().scenario.label.c_str(), label, text);
    return r;
  }

  bool decays_away() const {
    return testing::state_decays_away(GetParam().member, GetParam().scenario);
  }

  Problem problem_;
  Outputs ref_;
};

TEST_P(PrecisionContractBound, Bf16GradePassesItsEmulation) {
  const PrecisionContract bf16 = contract_for(Grade::kBf16);
  EXPECT_LE(judge("bf16 in bf16", bf16, bf16).worst(), 1.0);
  judge("bf16+carry in bf16", plus_carry(bf16), bf16);  // measured, see the file comment
}

TEST_P(PrecisionContractBound, Fp32GradePassesFp32AndFailsEveryExtraRounding) {
  const PrecisionContract fp32 = contract_for(Grade::kFp32);
  EXPECT_LE(judge("fp32 in fp32", fp32, fp32).worst(), 1.0);
  EXPECT_GT(judge("bf16 in fp32", contract_for(Grade::kBf16), fp32).worst(), 1.0);
  EXPECT_GT(judge("fp32+carry in fp32", plus_carry(fp32), fp32).worst(), 1.0);
  const double cast = judge("fp32+cast in fp32", plus_state_cast(fp32), fp32).worst();
  if ((!problem_.h0.empty() || problem_.shape.tokens > 64) && !decays_away()) {
    EXPECT_GT(cast, 1.0);
  }
}

TEST_P(PrecisionContractBound, ChainFp32PassesItsEmulationAndFailsOneMoreRounding) {
  const PrecisionContract chain = chain_fp32();
  EXPECT_LE(judge("chain in chain", chain, chain).worst(), 1.0);
  EXPECT_GT(judge("chain+carry in chain", plus_carry(chain), chain).worst(), 1.0);
  // In a single chunk the cast rounds only h0's contribution to o, next to A^qk·Δ's declared
  // rounding: measured (la T63: 0.93), asserted from the second chunk on.
  const double cast = judge("chain+cast in chain", plus_state_cast(chain), chain).worst();
  if (problem_.shape.tokens > 64 && !decays_away()) {
    EXPECT_GT(cast, 1.0);
  }
}

INSTANTIATE_TEST_SUITE_P(AllMembers, PrecisionContractBound, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return std::string(name(info.param.member)) + "_" +
                                  info.param.scenario.label;
                         });

}  // namespace
}  // namespace kcv::glr
