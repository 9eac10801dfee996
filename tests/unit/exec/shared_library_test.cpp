// File: tests/unit/exec/shared_library_test.cpp
// Loading kernels from the fixture shared libraries (tests/fixtures/kernels): choosing a kernel
// by name or op, and the error for every way a library can be unusable.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fixtures/fixture_paths.hpp"
#include "kcv/candidate.hpp"

namespace kcv {
namespace {

using testing::fixture_path;

const std::string kGood = fixture_path("libkcv_fixture_good.so");
const std::string kTwo = fixture_path("libkcv_fixture_two.so");
const std::string kMisbehaving = fixture_path("libkcv_fixture_misbehaving.so");

std::string error_of(const Expected<std::unique_ptr<Candidate>>& c) {
  return c.has_value() ? std::string("<loaded>") : c.error().to_string();
}

TEST(SharedLibrary, LoadsTheOnlyKernelWithItsContract) {
  auto c = load_shared_library_candidate(kGood, "", "");
  ASSERT_TRUE(c.has_value()) << error_of(c);
  EXPECT_EQ((*c)->name(), "good_add");
  EXPECT_EQ((*c)->op(), "add");
  EXPECT_EQ((*c)->contract().input_dtypes, (std::vector<DType>{DType::kF32, DType::kF32}));
}

TEST(SharedLibrary, ResolvesDeviceCodeNextToTheLibrary) {
  auto c = load_shared_library_candidate(kGood, "", "");
  ASSERT_TRUE(c.has_value()) << error_of(c);
  const auto expected = std::filesystem::path(kGood).parent_path() / "static_smem_sm_90a.ptxas.log";
  EXPECT_EQ((*c)->device_code(), std::optional<std::string>(expected.lexically_normal().string()));
}

TEST(SharedLibrary, ListsEveryKernelWithItsOp) {
  auto list = list_library_kernels(kTwo);
  ASSERT_TRUE(list.has_value()) << list.error().to_string();
  const std::vector<std::pair<std::string, std::string>> expected = {{"add_forward", "add"},
                                                                     {"mul_forward", "mul"}};
  EXPECT_EQ(*list, expected);
}

TEST(SharedLibrary, PicksAKernelByNameOrByOp) {
  auto by_name = load_shared_library_candidate(kTwo, "mul_forward", "");
  ASSERT_TRUE(by_name.has_value()) << error_of(by_name);
  EXPECT_EQ((*by_name)->op(), "mul");
  auto by_op = load_shared_library_candidate(kTwo, "", "add");
  ASSERT_TRUE(by_op.has_value()) << error_of(by_op);
  EXPECT_EQ((*by_op)->name(), "add_forward");
}

TEST(SharedLibrary, RefusesToGuessBetweenSeveralKernels) {
  auto c = load_shared_library_candidate(kTwo, "", "");
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(c.error().message.find("add_forward (add), mul_forward (mul)"), std::string::npos)
      << error_of(c);
  EXPECT_NE(c.error().message.find("--kernel"), std::string::npos) << error_of(c);
}

TEST(SharedLibrary, RefusesAnAmbiguousOp) {
  auto c = load_shared_library_candidate(kMisbehaving, "", "add");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("kernels for op 'add'"), std::string::npos) << error_of(c);
  EXPECT_NE(c.error().message.find("add_segfault (add)"), std::string::npos) << error_of(c);
}

TEST(SharedLibrary, NamesTheAvailableKernelsForAnUnknownNameOrOp) {
  auto name = load_shared_library_candidate(kTwo, "div_forward", "");
  ASSERT_FALSE(name.has_value());
  EXPECT_EQ(name.error().code, ErrorCode::kNotFound);
  EXPECT_NE(name.error().message.find("no kernel named 'div_forward'"), std::string::npos)
      << error_of(name);
  EXPECT_NE(name.error().message.find("mul_forward (mul)"), std::string::npos) << error_of(name);
  auto op = load_shared_library_candidate(kTwo, "", "softmax");
  ASSERT_FALSE(op.has_value());
  EXPECT_NE(op.error().message.find("no kernel for op 'softmax'"), std::string::npos)
      << error_of(op);
  auto mismatch = load_shared_library_candidate(kTwo, "mul_forward", "add");
  ASSERT_FALSE(mismatch.has_value());
  EXPECT_NE(mismatch.error().message.find("implements op 'mul', not 'add'"), std::string::npos)
      << error_of(mismatch);
}

TEST(SharedLibrary, ReportsAMissingFile) {
  auto c = load_shared_library_candidate(fixture_path("libdoes_not_exist.so"), "", "");
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code, ErrorCode::kNotFound);
  EXPECT_NE(error_of(c).find("libdoes_not_exist.so"), std::string::npos);
}

TEST(SharedLibrary, PassesOnTheLoadersComplaintAboutANonLibrary) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("kcv_not_a_library_" + std::to_string(getpid()) + ".so");
  std::ofstream(path) << "this is not an ELF file\n";
  auto c = load_shared_library_candidate(path.string(), "", "");
  std::filesystem::remove(path);
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code, ErrorCode::kCandidate);
  EXPECT_NE(c.error().message.find("cannot load as a shared library"), std::string::npos)
      << error_of(c);
  EXPECT_NE(c.error().message.find(path.string()), std::string::npos)
      << error_of(c);  // dlerror names the file
}

TEST(SharedLibrary, PointsALibraryWithoutTheEntryPointAtTheHeader) {
  const std::string path = fixture_path("libkcv_fixture_no_symbol.so");
  auto c = load_shared_library_candidate(path, "", "");
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().message,
            "library " + path + " does not export kcv_kernels; see include/kcv/kcv_kernel.h");
}

TEST(SharedLibrary, RejectsAnEmptyKernelTable) {
  auto c = load_shared_library_candidate(fixture_path("libkcv_fixture_empty.so"), "", "");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("lists no kernels"), std::string::npos) << error_of(c);
  EXPECT_FALSE(list_library_kernels(fixture_path("libkcv_fixture_empty.so")).has_value());
}

TEST(SharedLibrary, NamesTheKernelWhoseContractIsMalformed) {
  auto c = load_shared_library_candidate(fixture_path("libkcv_fixture_bad_contract.so"), "", "");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("typo_add"), std::string::npos) << error_of(c);
  EXPECT_NE(c.error().message.find("profle"), std::string::npos) << error_of(c);
}

TEST(SharedLibrary, KeepsTheLibraryLoadedExactlyAsLongAsTheCandidate) {
  const std::string path = std::filesystem::absolute(kGood).lexically_normal().string();
  auto is_loaded = [&] {
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (h != nullptr) dlclose(h);
    return h != nullptr;
  };
  ASSERT_FALSE(is_loaded());
  {
    auto c = load_shared_library_candidate(kGood, "", "");
    ASSERT_TRUE(c.has_value());
    EXPECT_TRUE(is_loaded());
  }
  EXPECT_FALSE(is_loaded());
}

}  // namespace
}  // namespace kcv
