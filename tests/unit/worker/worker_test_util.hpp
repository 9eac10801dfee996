// File: tests/unit/worker/worker_test_util.hpp
// Shared setup of the worker tests: the real kcv-worker of this build (KCV_BINARY_DIR), fixture
// kernels loaded both in this process (the Candidate kcv checks names against, and the
// in-process reference run) and in the worker, and exact f32 add inputs.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>

#include "fixtures/fixture_paths.hpp"
#include "kcv/candidate.hpp"
#include "kcv/worker.hpp"

namespace kcv::testing {

inline const Shape kShape = {4, 8};
inline constexpr int64_t kN = 32;
inline const std::vector<OutputSpec> kOut = {{DType::kF32, kShape}};

inline std::string library_of(const std::string& kernel) {
  if (kernel == "good_add") return fixture_path("libkcv_fixture_good.so");
  if (kernel == "add_moody") return fixture_path("libkcv_fixture_worker_moody.so");
  return fixture_path("libkcv_fixture_misbehaving.so");
}

inline std::unique_ptr<Candidate> load_here(const std::string& kernel) {
  auto c = load_shared_library_candidate(library_of(kernel), kernel, "");
  EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().to_string());
  return c ? std::move(*c) : nullptr;
}

inline WorkerOptions worker_options(const std::string& kernel) {
  WorkerOptions o;
  o.command = {std::string(KCV_BINARY_DIR) + "/kcv-worker"};
  o.load.path = library_of(kernel);
  o.load.kernel = kernel;
  return o;
}

// x[i] = i + 0.25 and y[i] = 2i: every sum is exact in f32.
inline std::vector<HostTensor> add_inputs() {
  std::vector<double> x, y;
  for (int64_t i = 0; i < kN; ++i) {
    x.push_back(static_cast<double>(i) + 0.25);
    y.push_back(2.0 * static_cast<double>(i));
  }
  return {make_tensor(DType::kF32, kShape, x), make_tensor(DType::kF32, kShape, y)};
}

inline CallOptions call_options(int32_t block = 128, uint64_t seed = 7) {
  CallOptions o;
  o.sentinel_seed = seed;
  o.launch = LaunchConfig{block, 1};
  return o;
}

inline void expect_sums(const CallRecord& r) {
  ASSERT_EQ(r.outputs.size(), 1u);
  for (int64_t i = 0; i < kN; ++i)
    EXPECT_EQ(r.outputs[0].value_at(i), 3.0 * static_cast<double>(i) + 0.25) << i;
}

// The worker's record of a call equals the in-process executor's: status, message, audit facts
// and every raw output byte.
inline void expect_same(const CallRecord& a, const CallRecord& b) {
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.message, b.message);
  EXPECT_EQ(a.launch, b.launch);
  EXPECT_EQ(a.sentinel, b.sentinel);
  EXPECT_EQ(a.inputs_unchanged, b.inputs_unchanged);
  EXPECT_EQ(a.mutated_input, b.mutated_input);
  EXPECT_EQ(a.first_mutated_input_elem, b.first_mutated_input_elem);
  EXPECT_EQ(a.guards_intact, b.guards_intact);
  EXPECT_EQ(a.first_guard_violation, b.first_guard_violation);
  EXPECT_EQ(a.all_written, b.all_written);
  EXPECT_EQ(a.first_unwritten, b.first_unwritten);
  EXPECT_EQ(a.unwritten_output, b.unwritten_output);
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (std::size_t k = 0; k < a.outputs.size(); ++k) {
    const auto ra = a.outputs[k].raw(), rb = b.outputs[k].raw();
    ASSERT_EQ(ra.size(), rb.size());
    EXPECT_TRUE(std::equal(ra.begin(), ra.end(), rb.begin())) << "output " << k << " raw bytes";
  }
}

}  // namespace kcv::testing
