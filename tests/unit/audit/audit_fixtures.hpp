// File: tests/unit/audit/audit_fixtures.hpp
// Helpers for the audit tests: a scratch directory per test, hand-written corpus rows (our own
// toy data, never corpus content), and synthetic kernels with a known set of verdicts, so a
// test can tell a complete kernel from a half-written one.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kcv/audit.hpp"
#include "unit/test_key_dir.hpp"

namespace kcv::audit::testing {

/// A fresh directory under the system temp dir, removed at destruction.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            fmt::format("kcv_audit_{}_{}_{}", info->test_suite_name(), info->name(), ::getpid());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

/// A valid row of the corpus schema, with toy code.
inline nlohmann::json toy_row(const std::string& id, int level = 1,
                              const std::string& language = "cuda") {
  return {{"id", id},
          {"corpus", "toy"},
          {"source_repo", "example/toy"},
          {"source_commit", "0000000000000000000000000000000000000000"},
          {"source_path", "toy/" + id + ".py"},
          {"level", level},
          {"problem_id", 7},
          {"problem_name", "7_Toy"},
          {"reference_version", "v0.1"},
          {"reference_code", "class Model: pass"},
          {"candidate_code", "class ModelNew: pass"},
          {"language", language},
          {"model", nullptr},
          {"original_harness", "toy harness"},
          {"original_verdict", "accepted"},
          {"original_speedup", 1.5},
          {"original_hardware", nullptr}};
}

inline KernelInfo toy_kernel(const std::string& id, const std::string& corpus = "toy",
                             const std::string& op_class = "elementwise") {
  KernelInfo k;
  k.kernel_id = id;
  k.corpus = corpus;
  k.level = 1;
  k.problem_id = 1;
  k.problem_name = "1_Toy";
  k.language = "cuda";
  k.op_class = op_class;
  k.original_verdict = "accepted";
  return k;
}

inline const std::vector<std::string>& toy_gates() {
  static const std::vector<std::string> gates = {"CMP-01", "CMP-02", "EXC-01", "ORD-02"};
  return gates;
}

/// Every gate of toy_gates() under each profile; CMP-01 fails (with a probe token, finding
/// value_over_bound at the reference shape) when `fail`.
inline KernelOutcome toy_outcome(const std::string& id, bool fail = false,
                                 const std::vector<std::string>& profiles = {"strict"}) {
  KernelOutcome o;
  o.kernel_id = id;
  o.status = KernelStatus::kOk;
  o.replica_verdict = "accepted";
  for (const std::string& profile : profiles) {
    for (const std::string& gate : toy_gates()) {
      VerdictRecord v;
      v.gate = gate;
      v.profile = profile;
      const bool failing = fail && gate == "CMP-01";
      v.verdict = failing ? "fail" : "pass";
      v.worst_ratio = failing ? 3.0 : 0.25;
      v.evidence_json = fmt::format(R"({{"summary":"{} on {}"}})", gate, id);
      v.probe_token = failing ? fmt::format(R"({{"probe":"{}"}})", id) : "";
      v.finding = failing ? Finding::kValueOverBound : Finding::kNone;
      o.verdicts.push_back(v);
    }
  }
  return o;
}

inline std::string kid(int i) { return fmt::format("toy/run/L1/P{:03d}", i); }

}  // namespace kcv::audit::testing
