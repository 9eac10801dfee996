// File: glr/verify/tests/mma_adapter_test.cpp
// glr/check/mma_adapter.hpp, the calls of the tensor-core kernels: what the kernels do not take is
// refused with a message naming it; head dims are zero-padded to 128 in the call's state layout
// and sliced back; gates are widened, fp32 β rounded to bf16 (to nearest even), dg rounded into
// g's dtype and dβ widened into β's. (The kernels themselves are judged in mma_pipeline_test.)
#include "check/mma_adapter.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "check/bf16.hpp"

namespace kcv::glr::check {
namespace {

template <typename T>
std::vector<std::uint8_t> bytes_of(const std::vector<T>& x) {
  std::vector<std::uint8_t> out(x.size() * sizeof(T));
  std::memcpy(out.data(), x.data(), out.size());
  return out;
}

template <typename T>
std::vector<T> as(const std::vector<std::uint8_t>& b) {
  std::vector<T> out(b.size() / sizeof(T));
  std::memcpy(out.data(), b.data(), b.size());
  return out;
}

/// GDN, one sequence of 2 tokens, H = 1, HV = 2, K = 3, V = 5, states [V, K]; every input
/// element holds its own index (bf16-exact), g in bf16, β in fp32.
HostInputs small_call() {
  HostInputs in;
  in.member = Member::kGatedDeltaNet;
  in.cfg.layout = StateLayout::kVK;
  in.cfg.gate_dtype = gpu::DType::kBFloat16;
  in.cfg.beta_dtype = gpu::DType::kFloat32;
  in.cfg.scale = 0.5f;
  Shape& s = in.shape;
  s.tokens = 2;
  s.qk_heads = 1;
  s.v_heads = 2;
  s.key_dim = 3;
  s.value_dim = 5;
  s.cu_seqlens = {0, 2};
  const auto ramp = [](std::int64_t n) {
    std::vector<std::uint16_t> out;
    for (std::int64_t i = 0; i < n; ++i) out.push_back(float_to_bf16(static_cast<float>(i + 1)));
    return out;
  };
  in.q = ramp(s.qk_size());
  in.k = ramp(s.qk_size());
  in.v = ramp(s.v_size());
  in.d_o = ramp(s.v_size());
  in.g = bytes_of(std::vector<std::uint16_t>{float_to_bf16(-0.5f), float_to_bf16(-0.25f),
                                             float_to_bf16(-1.0f), float_to_bf16(-2.0f)});
  in.beta = bytes_of(std::vector<float>{0.1f, 0.2f, 0.3f, 0.4f});
  for (std::int64_t i = 0; i < s.state_size(); ++i) {
    in.h0.push_back(static_cast<float>(i + 1));
    in.d_final.push_back(static_cast<float>(-i - 1));
  }
  in.cu64 = s.cu_seqlens;
  return in;
}

TEST(MmaAdapter, RefusesHeadDimsAbove128) {
  HostInputs in = small_call();
  in.shape.value_dim = 129;
  Expected<MmaInputs> x = mma_inputs(in);
  ASSERT_FALSE(x.has_value());
  EXPECT_NE(x.error().to_string().find("V = 129"), std::string::npos) << x.error().to_string();
}

TEST(MmaAdapter, PadsWithZerosInTheStateLayoutAndWidensAndRoundsTheGates) {
  const HostInputs in = small_call();
  Expected<MmaInputs> x = mma_inputs(in);
  ASSERT_TRUE(x.has_value()) << x.error().to_string();
  EXPECT_EQ(x->dims.key_dim, 128);
  EXPECT_EQ(x->dims.value_dim, 128);
  EXPECT_EQ(x->dims.num_seqs, 1);
  EXPECT_EQ(x->cu_seqlens, (std::vector<std::int64_t>{0, 2}));
  EXPECT_EQ(x->scale, 0.5f);  // the call's own K^-1/2, not 128's
  // q[t = 1, h = 0, :]: columns 0..2 are the call's, the rest 0.
  ASSERT_EQ(x->q.size(), 2u * 128);
  EXPECT_EQ(x->q[128 + 2], in.q[3 + 2]);
  EXPECT_EQ(x->q[128 + 3], 0);
  // v[t = 0, hv = 1, :]: columns 0..4, then 0.
  EXPECT_EQ(x->v[128 + 4], in.v[5 + 4]);
  EXPECT_EQ(x->v[128 + 5], 0);
  // h0[n = 0, hv = 1] in [V, K]: row 4, column 2 is element 1·15 + 4·3 + 2; row 5 and column 3
  // are padding.
  const std::size_t head1 = 128 * 128;
  EXPECT_EQ(x->h0[head1 + 4 * 128 + 2], in.h0[15 + 4 * 3 + 2]);
  EXPECT_EQ(x->h0[head1 + 4 * 128 + 3], 0.0f);
  EXPECT_EQ(x->h0[head1 + 5 * 128 + 0], 0.0f);
  EXPECT_EQ(x->dht[head1 + 4 * 128 + 2], in.d_final[15 + 4 * 3 + 2]);
  EXPECT_EQ(x->g, (std::vector<float>{-0.5f, -0.25f, -1.0f, -2.0f}));
  EXPECT_EQ(x->beta[1], float_to_bf16(0.2f));
  EXPECT_NE(bf16_to_float(x->beta[1]), 0.2f);  // the one rounding the adaptation adds
}

TEST(MmaAdapter, SlicesThePaddedOutputsBackIntoTheCallsShapesAndDtypes) {
  const HostInputs in = small_call();
  Expected<MmaInputs> x = mma_inputs(in);
  ASSERT_TRUE(x.has_value()) << x.error().to_string();
  // Padded outputs made of the padded inputs (o, dv ← v; dq, dk ← q; ht, dh0 ← h0), dg and dβ of
  // values that round / widen visibly.
  MmaOutputData padded;
  padded[kMmaO] = bytes_of(x->v);
  padded[kMmaDv] = bytes_of(x->v);
  padded[kMmaDq] = bytes_of(x->q);
  padded[kMmaDk] = bytes_of(x->q);
  padded[kMmaHt] = bytes_of(x->h0);
  padded[kMmaDh0] = bytes_of(x->h0);
  padded[kMmaDg] = bytes_of(std::vector<float>{1.0f + 1.0f / 512, 2.0f, 3.0f, 4.0f});
  padded[kMmaDbeta] = bytes_of(std::vector<std::uint16_t>{float_to_bf16(0.5f), 0, 0, 0});
  const MmaOutputBytes sizes = mma_output_bytes(*x);
  for (int i = 0; i < kMmaOutputs; ++i) EXPECT_EQ(padded[i].size(), sizes[i]) << i;
  const DeviceResults r = mma_results(in, padded);
  ASSERT_EQ(r.tensors.size(), 8u);
  EXPECT_EQ(as<std::uint16_t>(r.find("o")->bytes), in.v);
  EXPECT_EQ(as<std::uint16_t>(r.find("dv")->bytes), in.v);
  EXPECT_EQ(as<std::uint16_t>(r.find("dq")->bytes), in.q);
  EXPECT_EQ(as<std::uint16_t>(r.find("dk")->bytes), in.q);
  EXPECT_EQ(as<float>(r.find("ht")->bytes), in.h0);
  EXPECT_EQ(as<float>(r.find("dh0")->bytes), in.h0);
  ASSERT_EQ(r.find("dg")->dtype, gpu::DType::kBFloat16);
  EXPECT_EQ(as<std::uint16_t>(r.find("dg")->bytes)[0], float_to_bf16(1.0f));  // to nearest even
  ASSERT_EQ(r.find("dbeta")->dtype, gpu::DType::kFloat32);
  EXPECT_EQ(as<float>(r.find("dbeta")->bytes)[0], 0.5f);
}

}  // namespace
}  // namespace kcv::glr::check
