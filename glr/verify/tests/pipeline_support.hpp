// File: glr/verify/tests/pipeline_support.hpp
// What the GLR pipeline tests share (pipeline_test.cpp, decode_test.cpp, mma_pipeline_test.cpp):
// the small case list's options, a candidate loaded from one of the test libraries, and one
// gate's result out of a report.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kcv/glr/verify.hpp"

namespace kcv::glr::pipeline_test {

/// The small case list, 3 runs for ORD-02, 2 threads for the references; the grades as given
/// (the default: fp32 only).
inline GlrOptions small(std::vector<Grade> grades = {Grade::kFp32}) {
  GlrOptions o;
  o.cases = CaseList::kSmall;
  o.grades = std::move(grades);
  o.runs = 3;
  o.threads = 2;
  o.timeout_ms = 300000;
  return o;
}

/// Kernel `kernel` of the candidate library `lib`, with the GLR ops registered; null (and a
/// test failure) when it does not load.
inline std::unique_ptr<Candidate> load(const char* lib, const std::string& kernel) {
  EXPECT_TRUE(register_ops().ok());
  auto c = load_shared_library_candidate(lib, kernel, "");
  EXPECT_TRUE(c.has_value()) << c.error().to_string();
  return c ? std::move(*c) : nullptr;
}

/// The result of gate `id` in `r` (a test failure and the first result when there is none).
inline const GateResult& result_of(const VerifyReport& r, GateId id) {
  for (const GateResult& g : r.results)
    if (g.gate == id) return g;
  ADD_FAILURE() << "no result for " << gate_code(id);
  return r.results.front();
}

}  // namespace kcv::glr::pipeline_test
