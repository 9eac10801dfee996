// File: tests/unit/resource/ptxas_log_test.cpp
// parse_ptxas_log on real `nvcc -Xptxas -v` output: captured logs (tests/fixtures/data, exact
// numbers as ptxas printed them) and logs the build produces with the installed nvcc (numbers
// fixed by construction: 3000 floats of __shared__, -maxrregcount=32).
#include <gtest/gtest.h>

#include "fixtures/fixture_paths.hpp"
#include "kcv/resource.hpp"

namespace kcv {
namespace {

using testing::fixture_data_path;
using testing::fixture_path;
using testing::read_file;

ResourceReport parse_file(const std::string& path) {
  auto r = parse_ptxas_log(read_file(path));
  EXPECT_TRUE(r.has_value()) << path << ": " << (r ? "" : r.error().to_string());
  return r ? *r : ResourceReport{};
}

const KernelResources* find(const ResourceReport& r, std::string_view name, std::string_view arch) {
  for (const KernelResources& k : r.kernels) {
    if (k.name == name && k.arch == arch) return &k;
  }
  return nullptr;
}

TEST(PtxasLog, ReadsSpillsOfRegisterLimitedKernelSm90a) {
  const ResourceReport r = parse_file(fixture_data_path("register_heavy_sm_90a.ptxas.log"));
  ASSERT_EQ(r.kernels.size(), 1u);
  const KernelResources& k = r.kernels[0];
  EXPECT_EQ(k.name, "_Z21register_heavy_kernelPfPKfi");
  EXPECT_EQ(k.arch, "sm_90a");
  EXPECT_EQ(k.registers, 32);
  EXPECT_EQ(k.stack_bytes, 528);
  EXPECT_EQ(k.spill_store_bytes, 1000);
  EXPECT_EQ(k.spill_load_bytes, 756);
  EXPECT_EQ(k.shared_bytes, 0);
  EXPECT_EQ(r.format, ResourceFormat::kPtxasLog);
}

TEST(PtxasLog, ReadsSpillsOfRegisterLimitedKernelSm100a) {
  const ResourceReport r = parse_file(fixture_data_path("register_heavy_sm_100a.ptxas.log"));
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].arch, "sm_100a");
  EXPECT_EQ(r.kernels[0].registers, 32);
  EXPECT_EQ(r.kernels[0].spill_store_bytes, 992);
  EXPECT_EQ(r.kernels[0].spill_load_bytes, 744);
}

TEST(PtxasLog, ReadsStaticSharedMemoryAndEveryEntry) {
  const ResourceReport r = parse_file(fixture_data_path("static_smem_sm_90a.ptxas.log"));
  ASSERT_EQ(r.kernels.size(), 2u);
  const KernelResources* smem = find(r, "_Z18static_smem_kernelPfPKf", "sm_90a");
  const KernelResources* bounded = find(r, "_Z14bounded_kernelPf", "sm_90a");
  ASSERT_NE(smem, nullptr);
  ASSERT_NE(bounded, nullptr);
  EXPECT_EQ(smem->shared_bytes, 12000);
  EXPECT_EQ(smem->registers, 12);
  EXPECT_EQ(bounded->shared_bytes, 0);
  EXPECT_EQ(bounded->registers, 10);
}

TEST(PtxasLog, KeepsOneRecordPerArchAndReadsConstantBanks) {
  const ResourceReport r = parse_file(fixture_data_path("static_smem_sm_75_sm_100a.ptxas.log"));
  ASSERT_EQ(r.kernels.size(), 4u);
  const KernelResources* old_arch = find(r, "_Z18static_smem_kernelPfPKf", "sm_75");
  const KernelResources* new_arch = find(r, "_Z18static_smem_kernelPfPKf", "sm_100a");
  ASSERT_NE(old_arch, nullptr);
  ASSERT_NE(new_arch, nullptr);
  EXPECT_EQ(old_arch->constant_bytes, 368);  // "368 bytes cmem[0]", printed for sm_75 only
  EXPECT_EQ(old_arch->shared_bytes, 12000);
  EXPECT_EQ(new_arch->constant_bytes, 0);
  EXPECT_EQ(new_arch->shared_bytes, 12000);
  EXPECT_EQ(find(r, "_Z14bounded_kernelPf", "sm_75")->constant_bytes, 360);
}

TEST(PtxasLog, DoesNotChargeAHelperFunctionsFrameToAnEntry) {
  // With -rdc the helper's "72 bytes stack frame" block follows dyn_smem's own block.
  const ResourceReport r = parse_file(fixture_data_path("helper_call_rdc_sm_90a.ptxas.log"));
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(find(r, "dyn_smem", "sm_90a")->stack_bytes, 0);
  EXPECT_EQ(find(r, "_Z12const_kernelPfPKf", "sm_90a")->stack_bytes, 0);
  EXPECT_EQ(find(r, "_Z12const_kernelPfPKf", "sm_90a")->registers, 24);
  EXPECT_EQ(find(r, "_Z6helperf", "sm_90a"), nullptr);
}

TEST(PtxasLog, ReadsInlinedHelperFrameAsTheEntrysOwn) {
  const ResourceReport r = parse_file(fixture_data_path("helper_call_sm_90a.ptxas.log"));
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(find(r, "_Z12const_kernelPfPKf", "sm_90a")->stack_bytes, 64);
}

TEST(PtxasLog, RejectsALogOfAFailedCompilation) {
  auto r = parse_ptxas_log(
      "ptxas tmem.ptx, line 32; error   : Argument 1 of instruction 'tcgen05.alloc': value '544' "
      "out of range, expected to be in range [32..512]\n"
      "ptxas fatal   : Ptx assembly aborted due to errors\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kParse);
  EXPECT_NE(r.error().message.find("line 2"), std::string::npos) << r.error().message;
}

TEST(PtxasLog, RejectsTextWithoutEntries) {
  auto r = parse_ptxas_log("ptxas info    : 0 bytes gmem\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("Compiling entry function"), std::string::npos);
}

TEST(PtxasLog, RejectsAnUnknownUsageItemNamingIt) {
  auto r = parse_ptxas_log(
      "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
      "ptxas info    : Function properties for k\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 12 registers, lots of smem\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("'lots of smem'"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("line 4"), std::string::npos) << r.error().message;
}

TEST(PtxasLog, ReadsTheLogOfTheInstalledNvccForSm90a) {
  KCV_REQUIRE_DEVICE_FIXTURES();
  const ResourceReport r = parse_file(fixture_path("static_smem_sm_90a.ptxas.log"));
  const KernelResources* smem = find(r, "_Z18static_smem_kernelPfPKf", "sm_90a");
  ASSERT_NE(smem, nullptr);
  EXPECT_EQ(smem->shared_bytes, 3000 * static_cast<int64_t>(sizeof(float)));
}

TEST(PtxasLog, ReadsSpillsFromTheInstalledNvccForBothArchs) {
  KCV_REQUIRE_DEVICE_FIXTURES();
  for (const char* arch : {"sm_90a", "sm_100a"}) {
    const ResourceReport r =
        parse_file(fixture_path(std::string("register_heavy_") + arch + ".ptxas.log"));
    const KernelResources* k = find(r, "_Z21register_heavy_kernelPfPKfi", arch);
    ASSERT_NE(k, nullptr) << arch;
    EXPECT_EQ(k->registers, 32) << arch;  // -maxrregcount=32
    EXPECT_GT(k->spill_store_bytes, 0) << arch;
    EXPECT_GT(k->spill_load_bytes, 0) << arch;
    EXPECT_GT(k->stack_bytes, 0) << arch;  // spilled values live in the stack frame
  }
}

}  // namespace
}  // namespace kcv
