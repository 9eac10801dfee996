// File: glr/dev/chunked_mma_forward_test.cpp
// The tensor-core forward (chunked_mma_forward.cuh) run through the host emulation of its atoms
// (host_runner.hpp) against the fp64 chunked reference, judged by the bf16-grade bound of
// include/kcv/glr/error_model.hpp on the same bf16 inputs: every element of o and of the final
// state within tau, every element written (outputs start as NaN). GDN at T ∈ {1, 63, 64, 65, 200},
// varlen (1+150+7+64+3, HV = 2), GVA (H = 1, HV = 2), no initial state with the [V, K] state
// layout, strong decay; LA, SSD and DeltaNet (the same kernels with the gate or the delta rule
// compiled out) at T = 65 and varlen; GLA (the per-channel gate: anchored Gram blocks, Q̄ and K̄)
// and KDA (the same with the delta rule) at T ∈ {1, 64, 65}, varlen, GVA and strong decay. Each
// case runs at value tiles 32 and 64, whose outputs must agree bit for bit (state columns are
// independent, and each element's summation order does not depend on the tile). K = V = 128
// throughout (the kernels' only size).
#include "glr/dev/chunked_mma_forward.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "glr/dev/dev_case.hpp"
#include "glr/dev/host_runner.hpp"
#include "glr/dev/mma_test_case.hpp"
#include "support/precision_emulation.hpp"
#include "support/problems.hpp"

namespace kcv::glr::dev {
namespace {

using testing::Decay;
using testing::ProblemSpec;

using Param = MmaTestCase;

std::vector<Param> params() {
  std::vector<Param> out;
  for (std::int64_t t : {1, 63, 64, 65, 200}) {
    std::string label = "gdn_T";
    label += std::to_string(t);
    out.push_back({label, Member::kGatedDeltaNet, mma_spec({t}, 1, 1, 700 + t)});
  }
  out.push_back({"gdn_Varlen", Member::kGatedDeltaNet, mma_spec({1, 150, 7, 64, 3}, 2, 2, 801)});
  out.push_back({"gdn_Gva", Member::kGatedDeltaNet, mma_spec({130}, 1, 2, 802)});
  ProblemSpec vk = mma_spec({100}, 1, 1, 803);
  vk.initial_state = false;
  vk.layout = StateLayout::kVK;
  out.push_back({"gdn_NoH0Vk", Member::kGatedDeltaNet, vk});
  ProblemSpec strong = mma_spec({130}, 1, 1, 804);
  strong.decay = Decay::kStrong;
  out.push_back({"gdn_Strong", Member::kGatedDeltaNet, strong});
  for (Member m : {Member::kLinearAttention, Member::kSimpleGla, Member::kDeltaNet, Member::kGla,
                   Member::kKda}) {
    std::string label(name(m));
    out.push_back({label + "_T65", m, mma_spec({65}, 1, 1, 900)});
    out.push_back({label + "_Varlen", m, mma_spec({1, 150, 7, 64, 3}, 1, 2, 901)});
  }
  for (Member m : {Member::kGla, Member::kKda}) {  // the per-channel gates
    const std::string label(name(m));
    const std::uint64_t seed = m == Member::kGla ? 1100 : 1200;
    for (std::int64_t t : {1, 64})
      out.push_back({label + "_T" + std::to_string(t), m, mma_spec({t}, 1, 1, seed + t)});
    out.push_back({label + "_Gva", m, mma_spec({130}, 1, 2, seed + 2)});
    ProblemSpec strong = mma_spec({200}, 1, 1, seed + 4);
    strong.decay = Decay::kStrong;
    out.push_back({label + "_Strong", m, strong});
  }
  return out;
}

/// 256-byte aligned host memory standing in for device memory.
struct Aligned {
  std::unique_ptr<std::byte, decltype(&std::free)> mem{nullptr, &std::free};
  explicit Aligned(std::size_t bytes)
      : mem(static_cast<std::byte*>(std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256)),
            &std::free) {}
  void* get() const { return mem.get(); }
};

struct Outcome {
  std::vector<bf16> o;
  std::vector<float> final_state;
};

Outcome run_forward(Member member, const Problem& p, const HostTensors& t, int value_tile,
                    bool state_wgmma) {
  Outcome r;
  poison(p, r.o, r.final_state);
  Expected<std::size_t> bytes = mma_forward_workspace_bytes(member, t.dims);
  EXPECT_TRUE(bytes) << (bytes ? "" : bytes.error().to_string());
  if (!bytes) return r;
  Aligned ws(*bytes);
  std::memset(ws.get(), 0xff, *bytes);  // poisoned: every workspace value is written before use
  // Inputs copied into aligned buffers (cp.async moves 16-byte pieces).
  const auto copy = [](const auto& v) {
    auto a = std::make_shared<Aligned>(v.size() * sizeof(v[0]));
    if (!v.empty()) std::memcpy(a->get(), v.data(), v.size() * sizeof(v[0]));
    return a;
  };
  auto q = copy(t.q), k = copy(t.k), v = copy(t.v), o = copy(r.o);
  const bool gated = traits(member).gate != GateKind::kNone;
  const bool delta = traits(member).delta_rule;
  MmaForwardTensors mt;
  mt.q = q->get();
  mt.k = k->get();
  mt.v = v->get();
  mt.g = gated ? t.g.data() : nullptr;
  mt.beta = delta ? t.beta.data() : nullptr;
  mt.h0 = t.h0.empty() ? nullptr : t.h0.data();
  mt.cu_seqlens = t.cu_seqlens.empty() ? nullptr : t.cu_seqlens.data();
  mt.o = o->get();
  mt.final_state = r.final_state.data();
  Expected<MmaForwardParams> prm = mma_forward_params(member, t.dims, static_cast<float>(p.scale),
                                                      p.layout, mt, ws.get(), *bytes);
  EXPECT_TRUE(prm) << (prm ? "" : prm.error().to_string());
  if (!prm) return r;
  prm->state_wgmma = state_wgmma;
  const Status st = emulate_mma_forward(member, *prm, value_tile);
  EXPECT_TRUE(st) << (st ? "" : st.error().to_string());
  std::memcpy(r.o.data(), o->get(), r.o.size() * sizeof(bf16));
  return r;
}

class ChunkedMmaForward : public ::testing::TestWithParam<Param> {};

TEST_P(ChunkedMmaForward, MeetsTheBf16GradeBoundAtBothValueTilesAndOnWgmma) {
  const Param& prm = GetParam();
  const Problem p = testing::kernel_inputs(testing::make_case(prm.member, prm.spec).problem);
  Expected<Expectation> e = expect(prm.member, p);
  ASSERT_TRUE(e) << e.error().to_string();
  const HostTensors t = host_tensors(p);
  const Outcome narrow = run_forward(prm.member, p, t, 32, false);
  const Outcome wide = run_forward(prm.member, p, t, 64, false);
  const Judgement j = judge(narrow.o, narrow.final_state, *e);
  std::printf("%-16s %s\n", prm.label.c_str(), j.describe().c_str());
  RecordProperty("bf16_grade", j.describe());
  EXPECT_TRUE(j.pass()) << testing::describe(prm.member, prm.spec) << ": " << j.describe();
  EXPECT_EQ(0, std::memcmp(narrow.o.data(), wide.o.data(), narrow.o.size() * sizeof(bf16)))
      << "value tiles 32 and 64 disagree on o";
  EXPECT_EQ(0, std::memcmp(narrow.final_state.data(), wide.final_state.data(),
                           narrow.final_state.size() * sizeof(float)))
      << "value tiles 32 and 64 disagree on the final state";
  // The state pass on wgmma (forward version 13, tile 32): each element's sum in mma_acc's order,
  // so the same bits.
  const Outcome wg = run_forward(prm.member, p, t, 32, true);
  EXPECT_EQ(0, std::memcmp(narrow.o.data(), wg.o.data(), narrow.o.size() * sizeof(bf16)))
      << "the wgmma state pass disagrees on o";
  EXPECT_EQ(0, std::memcmp(narrow.final_state.data(), wg.final_state.data(),
                           narrow.final_state.size() * sizeof(float)))
      << "the wgmma state pass disagrees on the final state";
}

TEST(ExpectByHead, ReassemblesTheReferenceAndAtMostTightensTheBound) {
  for (Member m : {Member::kGatedDeltaNet, Member::kGla}) {  // a scalar and a per-channel gate
    const Problem p =
        testing::kernel_inputs(testing::make_case(m, mma_spec({70, 1, 64}, 2, 4, 805)).problem);
    Expected<Expectation> whole = expect(m, p);
    Expected<Expectation> split = expect_by_head(m, p);
    ASSERT_TRUE(whole && split) << name(m);
    EXPECT_EQ(whole->ref.o, split->ref.o) << name(m);
    EXPECT_EQ(whole->ref.final_state, split->ref.final_state) << name(m);
    for (std::size_t i = 0; i < whole->tau.o.size(); ++i)
      ASSERT_LE(split->tau.o[i], whole->tau.o[i] * (1 + 1e-12)) << name(m) << " " << i;
    for (std::size_t i = 0; i < whole->tau.final_state.size(); ++i)
      ASSERT_LE(split->tau.final_state[i], whole->tau.final_state[i] * (1 + 1e-12))
          << name(m) << " " << i;
  }
}

TEST(ChunkedMmaForwardArguments, RejectsWhatTheKernelsDoNotTake) {
  gpu::Dims d;
  d.seq_len = 64;
  d.key_dim = 64;
  d.value_dim = 128;
  EXPECT_FALSE(mma_forward_workspace_bytes(Member::kGatedDeltaNet, d));
  d.key_dim = 128;
  EXPECT_TRUE(mma_forward_workspace_bytes(Member::kGatedDeltaNet, d));
  EXPECT_TRUE(mma_forward_workspace_bytes(Member::kKda, d));
  EXPECT_TRUE(mma_forward_workspace_bytes(Member::kGla, d));
  d.value_dim = 64;
  EXPECT_FALSE(mma_forward_workspace_bytes(Member::kKda, d));
}

TEST(ChunkedMmaForwardArguments, RejectsAPerChannelGateOffItsSixteenBytes) {
  gpu::Dims d;
  d.seq_len = 64;
  d.key_dim = 128;
  d.value_dim = 128;
  Expected<std::size_t> bytes = mma_forward_workspace_bytes(Member::kKda, d);
  ASSERT_TRUE(bytes);
  Aligned ws(*bytes), q(64 * 128 * 2), k(64 * 128 * 2), v(64 * 128 * 2), o(64 * 128 * 2),
      g(64 * 128 * 4 + 16), beta(64 * 2);
  MmaForwardTensors t;
  t.q = q.get();
  t.k = k.get();
  t.v = v.get();
  t.o = o.get();
  t.beta = beta.get();
  t.g = static_cast<const float*>(g.get());
  EXPECT_TRUE(mma_forward_params(Member::kKda, d, 1.0f, StateLayout::kKV, t, ws.get(), *bytes));
  t.g = static_cast<const float*>(g.get()) + 1;  // its loads take 16 bytes at a time
  Expected<MmaForwardParams> off =
      mma_forward_params(Member::kKda, d, 1.0f, StateLayout::kKV, t, ws.get(), *bytes);
  ASSERT_FALSE(off);
  EXPECT_NE(off.error().to_string().find("16-byte aligned"), std::string::npos)
      << off.error().to_string();
}

INSTANTIATE_TEST_SUITE_P(Members, ChunkedMmaForward, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return info.param.label;
                         });

}  // namespace
}  // namespace kcv::glr::dev
