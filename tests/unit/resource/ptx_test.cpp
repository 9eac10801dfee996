// File: tests/unit/resource/ptx_test.cpp
// parse_ptx on PTX the build compiles with nvcc -arch=sm_100a -ptx (tensor-memory allocations of
// 512 columns as an immediate, 544 through a register set by a mov, and a count from a kernel
// argument), and on small hand-written PTX for the scanner's corner cases.
#include <gtest/gtest.h>

#include "fixtures/fixture_paths.hpp"
#include "kcv/resource.hpp"

namespace kcv {
namespace {

using testing::fixture_path;
using testing::read_file;

KernelResources only_kernel(const std::string& ptx) {
  auto r = parse_ptx(ptx);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().to_string());
  if (!r || r->kernels.size() != 1) {
    ADD_FAILURE() << "expected one kernel";
    return {};
  }
  return r->kernels[0];
}

TEST(Ptx, ReadsAnImmediateAllocationOf512Columns) {
  KCV_REQUIRE_DEVICE_FIXTURES();
  const KernelResources k = only_kernel(read_file(fixture_path("tmem_alloc_512.ptx")));
  EXPECT_EQ(k.name, "_Z21tmem_alloc_512_kernelPj");
  EXPECT_EQ(k.arch, "sm_100a");
  EXPECT_EQ(k.tmem_alloc_columns, std::vector<int64_t>{512});
  EXPECT_FALSE(k.tmem_dynamic_alloc);
  EXPECT_EQ(k.tmem_deallocs, 1);
  EXPECT_EQ(k.tmem_relinquishes, 1);
  EXPECT_EQ(k.max_threads, 128);  // __launch_bounds__(128) -> .maxntid 128
  EXPECT_EQ(k.shared_bytes, 4);   // one uint32_t for the allocated address
}

TEST(Ptx, TracesA544ColumnCountThroughItsMov) {
  KCV_REQUIRE_DEVICE_FIXTURES();
  const KernelResources k = only_kernel(read_file(fixture_path("tmem_alloc_544.ptx")));
  EXPECT_EQ(k.tmem_alloc_columns, std::vector<int64_t>{544});
  EXPECT_FALSE(k.tmem_dynamic_alloc);
  EXPECT_EQ(k.tmem_deallocs, 1);
}

TEST(Ptx, FlagsAColumnCountFromAKernelArgumentAsDynamic) {
  KCV_REQUIRE_DEVICE_FIXTURES();
  const KernelResources k = only_kernel(read_file(fixture_path("tmem_alloc_dynamic.ptx")));
  EXPECT_TRUE(k.tmem_alloc_columns.empty());
  EXPECT_TRUE(k.tmem_dynamic_alloc);
  EXPECT_EQ(k.tmem_deallocs, 0);
  EXPECT_EQ(k.max_threads, 0);
}

constexpr const char* kHeader = ".version 9.0\n.target sm_100a\n.address_size 64\n";

TEST(Ptx, TreatsARegisterAssignedTwiceAsDynamic) {
  const std::string ptx =
      std::string(kHeader) +
      ".visible .entry k(\n.param .u32 n\n)\n{\n.reg .b32 %r<4>;\n"
      "mov.b32 %r1, 64;\n@%p1 mov.b32 %r1, 1024;\n"
      "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r2], %r1;\nret;\n}\n";
  const KernelResources k = only_kernel(ptx);
  EXPECT_TRUE(k.tmem_alloc_columns.empty());
  EXPECT_TRUE(k.tmem_dynamic_alloc);
}

TEST(Ptx, ReadsHexImmediatesAndVectorDestinations) {
  const std::string ptx =
      std::string(kHeader) +
      ".entry k()\n{\nld.shared.v2.u32 {%r1, %r3}, [s];\nmov.u32 %r2, 0x100;\n"
      "tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [%r9], %r2;\n"
      "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r9], %r3;\n}\n";
  const KernelResources k = only_kernel(ptx);
  EXPECT_EQ(k.tmem_alloc_columns, std::vector<int64_t>{256});
  EXPECT_TRUE(k.tmem_dynamic_alloc);  // %r3 comes from a load
}

TEST(Ptx, SizesSharedDeclarationsAndChargesModuleVariablesToTheirUsers) {
  const std::string ptx = std::string(kHeader) +
                          ".shared .align 16 .b8 tile[4][8];\n"
                          ".extern .shared .align 16 .b8 dynamic_smem[];\n"
                          "// .entry commented_out()\n"
                          ".visible .entry uses_tile()\n.maxntid 64, 2, 1\n{\n"
                          ".shared .align 16 .v4 .f32 quad[2];\nld.shared.u32 %r1, [tile];\n}\n"
                          ".visible .entry ignores_tile()\n.reqntid 32\n{\nret;\n}\n";
  auto r = parse_ptx(ptx);
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  ASSERT_EQ(r->kernels.size(), 2u);
  EXPECT_EQ(r->kernels[0].name, "uses_tile");
  EXPECT_EQ(r->kernels[0].shared_bytes, 4 * 8 + 2 * 4 * 4);
  EXPECT_EQ(r->kernels[0].max_threads, 128);
  EXPECT_EQ(r->kernels[1].shared_bytes, 0);
  EXPECT_EQ(r->kernels[1].max_threads, 32);
}

TEST(Ptx, ReportsADeviceFunctionThatAllocatesTensorMemory) {
  const std::string ptx = std::string(kHeader) +
                          ".func (.param .b32 ret) alloc_helper(.param .b32 a)\n{\n"
                          "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 128;\n}\n"
                          ".func plain_helper()\n{\nret;\n}\n"
                          ".visible .entry k()\n{\ncall.uni alloc_helper, ();\n}\n";
  auto r = parse_ptx(ptx);
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  ASSERT_EQ(r->kernels.size(), 2u);
  EXPECT_EQ(r->kernels[0].name, "alloc_helper");
  EXPECT_EQ(r->kernels[0].tmem_alloc_columns, std::vector<int64_t>{128});
  EXPECT_EQ(r->kernels[1].name, "k");
}

TEST(Ptx, RejectsPtxWithoutEntries) {
  auto r = parse_ptx(std::string(kHeader) + ".func f()\n{\nret;\n}\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find(".entry"), std::string::npos);
}

TEST(Ptx, RejectsAnUnterminatedBodyWithItsLine) {
  auto r = parse_ptx(std::string(kHeader) + ".entry k()\n{\nret;\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("line 5"), std::string::npos) << r.error().message;
}

TEST(Ptx, RejectsAnAllocWithoutAColumnOperand) {
  auto r = parse_ptx(
      std::string(kHeader) +
      ".entry k()\n{\ntcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1];\n}\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("line 6"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace kcv
