// File: tests/unit/exec/candidate_test.cpp
// make_candidate: descriptor validation, contract parsing (defaults when absent, errors naming
// the kernel and field), device_code resolution, and the kcv_call a kernel receives.
#include "kcv/candidate.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace kcv {
namespace {

// What the recording kernel saw in its last call.
struct Seen {
  int32_t abi = 0, block = 0, threads = 0, n_in = 0, n_out = 0;
  std::vector<std::string> names;
  std::vector<double> values;
};
Seen g_seen;

int recording_kernel(const kcv_tensor*, int32_t n_in, kcv_tensor*, int32_t n_out,
                     const kcv_call* call) {
  g_seen = Seen{call->abi_version, call->block, call->threads, n_in, n_out, {}, {}};
  for (int32_t i = 0; i < call->n_params; ++i) {
    g_seen.names.emplace_back(call->param_names[i]);
    g_seen.values.push_back(call->param_values[i]);
  }
  std::strncpy(call->error, "recorded", static_cast<size_t>(call->error_capacity));
  return 5;
}

kcv_kernel descriptor(const char* contract, const char* device_code = nullptr) {
  return kcv_kernel{"recorder", "clamp", contract, recording_kernel, device_code};
}

TEST(MakeCandidate, ParsesTheDeclaredContract) {
  auto c = make_candidate(descriptor(R"({"inputs":["f16"],"profile":"fast-math"})"));
  ASSERT_TRUE(c.has_value()) << c.error().to_string();
  EXPECT_EQ((*c)->name(), "recorder");
  EXPECT_EQ((*c)->op(), "clamp");
  EXPECT_EQ((*c)->contract().op, "clamp");
  EXPECT_EQ((*c)->contract().input_dtypes, std::vector<DType>{DType::kF16});
  EXPECT_EQ((*c)->contract().profile, ProfileId::kFastMath);
}

TEST(MakeCandidate, UsesTheOpDefaultsWithoutAContract) {
  auto c = make_candidate(descriptor(nullptr));
  ASSERT_TRUE(c.has_value()) << c.error().to_string();
  const Contract defaults = *parse_contract("{}", "clamp");
  EXPECT_EQ((*c)->contract().op, "clamp");
  EXPECT_EQ((*c)->contract().profile, defaults.profile);
  EXPECT_EQ((*c)->contract().input_dtypes, defaults.input_dtypes);
}

TEST(MakeCandidate, NamesTheKernelAndFieldOfAMalformedContract) {
  auto c = make_candidate(descriptor(R"({"profle":"strict"})"));
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("recorder"), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find("profle"), std::string::npos) << c.error().message;
}

TEST(MakeCandidate, RejectsAContractForAnotherOp) {
  auto c = make_candidate(descriptor(R"({"op":"softmax"})"));
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("softmax"), std::string::npos) << c.error().message;
}

TEST(MakeCandidate, RejectsAnUnknownOpListingTheKnownOnes) {
  auto c = make_candidate(kcv_kernel{"k", "frobnicate", nullptr, recording_kernel, nullptr});
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(c.error().message.find("frobnicate"), std::string::npos);
  EXPECT_NE(c.error().message.find("softmax"), std::string::npos) << c.error().message;
}

TEST(MakeCandidate, RejectsIncompleteDescriptors) {
  EXPECT_EQ(
      make_candidate(kcv_kernel{nullptr, "add", nullptr, recording_kernel, nullptr}).error().code,
      ErrorCode::kCandidate);
  EXPECT_EQ(make_candidate(kcv_kernel{"k", "", nullptr, recording_kernel, nullptr}).error().code,
            ErrorCode::kCandidate);
  auto no_run = make_candidate(kcv_kernel{"k", "add", nullptr, nullptr, nullptr});
  ASSERT_FALSE(no_run.has_value());
  EXPECT_NE(no_run.error().message.find("no run function"), std::string::npos);
}

TEST(MakeCandidate, ResolvesRelativeDeviceCodeAgainstTheBaseDir) {
  auto rel = make_candidate(descriptor(nullptr, "ptx/k.ptx"), "/opt/kernels");
  ASSERT_TRUE(rel.has_value());
  EXPECT_EQ((*rel)->device_code(), std::optional<std::string>("/opt/kernels/ptx/k.ptx"));
  auto abs = make_candidate(descriptor(nullptr, "/data/k.cubin"), "/opt/kernels");
  EXPECT_EQ((*abs)->device_code(), std::optional<std::string>("/data/k.cubin"));
  auto none = make_candidate(descriptor(nullptr), "/opt/kernels");
  EXPECT_EQ((*none)->device_code(), std::nullopt);
}

TEST(MakeCandidate, PassesParamsLaunchAndErrorTextThroughTheAbi) {
  auto c = make_candidate(descriptor(nullptr));
  ASSERT_TRUE(c.has_value());
  std::vector<kcv_tensor> in(1), out(1);
  std::string message;
  const int rc = (*c)->call(in, out, {{"max", 0.5}, {"min", -0.5}}, LaunchConfig{128, 4}, &message);
  EXPECT_EQ(rc, 5);
  EXPECT_EQ(message, "recorded");
  EXPECT_EQ(g_seen.abi, KCV_KERNEL_ABI_VERSION);
  EXPECT_EQ(g_seen.block, 128);
  EXPECT_EQ(g_seen.threads, 4);
  EXPECT_EQ(g_seen.n_in, 1);
  EXPECT_EQ(g_seen.n_out, 1);
  EXPECT_EQ(g_seen.names, (std::vector<std::string>{"max", "min"}));
  EXPECT_EQ(g_seen.values, (std::vector<double>{0.5, -0.5}));
}

}  // namespace
}  // namespace kcv
