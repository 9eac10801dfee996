// File: tests/unit/resource/cuobjdump_test.cpp
// parse_cuobjdump_resource_usage on captured real `cuobjdump --dump-resource-usage` output, and
// load_resource_report on the objects the build compiled, when a cuobjdump can be found
// ($KCV_CUOBJDUMP, next to nvcc, $CUDA_HOME/bin or PATH): its numbers must agree with ptxas's.
#include <gtest/gtest.h>

#include "fixtures/fixture_paths.hpp"
#include "kcv/resource.hpp"

namespace kcv {
namespace {

using testing::fixture_data_path;
using testing::fixture_path;
using testing::read_file;

ResourceReport parse_file(const std::string& path) {
  auto r = parse_cuobjdump_resource_usage(read_file(path));
  EXPECT_TRUE(r.has_value()) << path << ": " << (r ? "" : r.error().to_string());
  return r ? *r : ResourceReport{};
}

TEST(CuobjdumpUsage, ReadsRegistersStackAndArchOfAnObject) {
  const ResourceReport r = parse_file(fixture_data_path("register_heavy_sm_90a.cuobjdump.txt"));
  ASSERT_EQ(r.kernels.size(), 1u);
  const KernelResources& k = r.kernels[0];
  EXPECT_EQ(k.name, "_Z21register_heavy_kernelPfPKfi");
  EXPECT_EQ(k.arch, "sm_90a");
  EXPECT_EQ(k.registers, 32);
  EXPECT_EQ(k.stack_bytes, 528);
  EXPECT_EQ(k.constant_bytes, 548);
  EXPECT_EQ(r.format, ResourceFormat::kCuobjdump);
}

TEST(CuobjdumpUsage, AttributesEachCubinsArchToItsFunctions) {
  const ResourceReport r = parse_file(fixture_data_path("static_smem_sm_75_sm_100a.cuobjdump.txt"));
  ASSERT_EQ(r.kernels.size(), 4u);
  EXPECT_EQ(r.kernels[1].name, "_Z18static_smem_kernelPfPKf");
  EXPECT_EQ(r.kernels[1].arch, "sm_75");
  EXPECT_EQ(r.kernels[1].shared_bytes, 12000);
  EXPECT_EQ(r.kernels[3].name, "_Z18static_smem_kernelPfPKf");
  EXPECT_EQ(r.kernels[3].arch, "sm_100a");
  EXPECT_EQ(r.kernels[3].shared_bytes, 13024);  // 12000 + the 1 KiB system reservation
}

TEST(CuobjdumpUsage, LeavesArchEmptyForABareCubin) {
  const ResourceReport r = parse_file(fixture_data_path("static_smem_sm_90a_cubin.cuobjdump.txt"));
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.kernels[0].arch, "");
  EXPECT_EQ(r.kernels[1].registers, 12);
}

TEST(CuobjdumpUsage, ListsNonEntryFunctionsAsTheToolDoes) {
  const ResourceReport r = parse_file(fixture_data_path("helper_call_rdc_sm_90a.cuobjdump.txt"));
  ASSERT_EQ(r.kernels.size(), 3u);
  EXPECT_EQ(r.kernels[1].name, "_Z6helperf");
  EXPECT_EQ(r.kernels[2].registers, 24);
}

TEST(CuobjdumpUsage, RejectsAnUnknownItemNamingIt) {
  auto r = parse_cuobjdump_resource_usage("Resource usage:\n Function k:\n  REG:12 STACK=0\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("'STACK=0'"), std::string::npos) << r.error().message;
}

TEST(CuobjdumpUsage, RejectsAFunctionWithoutItsUsageLine) {
  auto r = parse_cuobjdump_resource_usage("Resource usage:\n Function k:\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kParse);
}

TEST(CuobjdumpUsage, RejectsOutputWithoutFunctions) {
  auto r =
      parse_cuobjdump_resource_usage("cuobjdump info    : File 'x' does not contain device code\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("--dump-resource-usage"), std::string::npos);
}

TEST(CuobjdumpUsage, AgreesWithPtxasOnTheObjectTheBuildCompiled) {
  KCV_REQUIRE_DEVICE_FIXTURES();
  auto dumped = load_resource_report(fixture_path("register_heavy_sm_90a.o"));
  if (!dumped && dumped.error().message.find("cuobjdump is needed") != std::string::npos) {
    GTEST_SKIP() << dumped.error().to_string();
  }
  ASSERT_TRUE(dumped.has_value()) << dumped.error().to_string();
  auto logged = parse_ptxas_log(read_file(fixture_path("register_heavy_sm_90a.ptxas.log")));
  ASSERT_TRUE(logged.has_value());
  ASSERT_EQ(dumped->kernels.size(), 1u);
  EXPECT_EQ(dumped->kernels[0].arch, "sm_90a");
  EXPECT_EQ(dumped->kernels[0].registers, logged->kernels[0].registers);
  EXPECT_EQ(dumped->kernels[0].stack_bytes, logged->kernels[0].stack_bytes);
}

}  // namespace
}  // namespace kcv
