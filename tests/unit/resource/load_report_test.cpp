// File: tests/unit/resource/load_report_test.cpp
// load_resource_report: the parser is picked from the content, errors name the file, and binary
// device code goes through cuobjdump; a stand-in cuobjdump (a shell script named by
// $KCV_CUOBJDUMP) checks the plumbing and the error path without the real tool.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "fixtures/fixture_paths.hpp"
#include "kcv/resource.hpp"

namespace kcv {
namespace {

using testing::fixture_data_path;
using testing::fixture_path;

class LoadResourceReport : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kcv_load_report_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    if (const char* v = std::getenv("KCV_CUOBJDUMP")) saved_ = v;
  }
  void TearDown() override {
    if (saved_)
      setenv("KCV_CUOBJDUMP", saved_->c_str(), 1);
    else
      unsetenv("KCV_CUOBJDUMP");
    std::filesystem::remove_all(dir_);
  }
  std::string write(const std::string& name, const std::string& text) {
    const auto p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  // A stand-in cuobjdump that prints `output` and exits with `code`.
  void fake_cuobjdump(const std::string& output_file, int code) {
    const std::string script = write(
        "cuobjdump", "#!/bin/sh\ncat '" + output_file + "'\nexit " + std::to_string(code) + "\n");
    std::filesystem::permissions(script, std::filesystem::perms::owner_all);
    setenv("KCV_CUOBJDUMP", script.c_str(), 1);
  }

  std::filesystem::path dir_;
  std::optional<std::string> saved_;
};

TEST_F(LoadResourceReport, RecognisesEachTextFormat) {
  auto log = load_resource_report(fixture_data_path("register_heavy_sm_90a.ptxas.log"));
  ASSERT_TRUE(log.has_value()) << log.error().to_string();
  EXPECT_EQ(log->format, ResourceFormat::kPtxasLog);
  EXPECT_EQ(log->source, fixture_data_path("register_heavy_sm_90a.ptxas.log"));
  auto dump = load_resource_report(fixture_data_path("register_heavy_sm_90a.cuobjdump.txt"));
  ASSERT_TRUE(dump.has_value()) << dump.error().to_string();
  EXPECT_EQ(dump->format, ResourceFormat::kCuobjdump);
  auto ptx = load_resource_report(
      write("k.ptx", ".version 9.0\n.target sm_90a\n.entry k()\n{\nret;\n}\n"));
  ASSERT_TRUE(ptx.has_value()) << ptx.error().to_string();
  EXPECT_EQ(ptx->format, ResourceFormat::kPtx);
}

TEST_F(LoadResourceReport, NamesAMissingFile) {
  auto r = load_resource_report((dir_ / "absent.ptx").string());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_NE(r.error().to_string().find("absent.ptx"), std::string::npos);
}

TEST_F(LoadResourceReport, RejectsTextOfNoKnownFormatNamingTheFile) {
  const std::string path = write("notes.txt", "hello\n");
  auto r = load_resource_report(path);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kParse);
  EXPECT_NE(r.error().to_string().find(path), std::string::npos);
  EXPECT_NE(r.error().message.find("ptxas -v log"), std::string::npos);
}

TEST_F(LoadResourceReport, ReadsAnObjectThroughCuobjdump) {
  fake_cuobjdump(fixture_data_path("register_heavy_sm_90a.cuobjdump.txt"), 0);
  auto r = load_resource_report(write("kernel.o",
                                      "\x7f"
                                      "ELF not really"));
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  ASSERT_EQ(r->kernels.size(), 1u);
  EXPECT_EQ(r->kernels[0].registers, 32);
  EXPECT_EQ(r->format, ResourceFormat::kCuobjdump);
}

TEST_F(LoadResourceReport, PassesOnCuobjdumpsComplaint) {
  const std::string complaint =
      write("complaint.txt", "cuobjdump fatal   : Could not open input file 'x'\n");
  fake_cuobjdump(complaint, 255);
  auto r = load_resource_report(write("kernel.cubin", "garbage"));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("Could not open input file"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("exit 255"), std::string::npos) << r.error().message;
}

TEST_F(LoadResourceReport, HostOnlyCodeIsAReportOfNoKernels) {
  // A C++ extension built without CUDA: cuobjdump says so and exits 255; that is no device
  // code to judge (RES-02 not applicable), not a failure to read it.
  const std::string complaint =
      write("complaint.txt", "cuobjdump info    : File 'x' does not contain device code\n");
  fake_cuobjdump(complaint, 255);
  auto r = load_resource_report(write("host_only.so",
                                      "\x7f"
                                      "ELF host code"));
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  EXPECT_TRUE(r->kernels.empty());  // judge_resources: "lists no kernel", not applicable
  EXPECT_EQ(r->format, ResourceFormat::kCuobjdump);
}

TEST_F(LoadResourceReport, ExplainsAMissingCuobjdump) {
  setenv("KCV_CUOBJDUMP", (dir_ / "no_such_tool").c_str(), 1);
  const std::string saved_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  setenv("PATH", dir_.c_str(), 1);
  const char* home = std::getenv("CUDA_HOME");
  const std::string saved_home = home ? home : "";
  unsetenv("CUDA_HOME");
  auto r = load_resource_report(write("kernel.cubin", "garbage"));
  setenv("PATH", saved_path.c_str(), 1);
  if (home) setenv("CUDA_HOME", saved_home.c_str(), 1);
  if (r.has_value() || r.error().message.find("cuobjdump is needed") == std::string::npos) {
    GTEST_SKIP() << "a cuobjdump sits next to nvcc, so it cannot be hidden from this test";
  }
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_NE(r.error().message.find("no_such_tool"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("ptxas -v log or PTX"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace kcv
