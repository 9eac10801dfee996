// File: glr/check/compare.hpp
// fla's agreement metric (gdn-spec.md §12): ratio = RMS(gpu − ref) / RMS(ref) per tensor, with
// fla's limits: o and the final state 0.005; dq, dk, dv, dh0 0.008; dβ and dg 0.02. Unlike fla's
// test no tensor is skipped for a small absolute difference (that would hide a wrong dg under
// strong decay, docs/05_glr.md). A non-finite GPU value makes the ratio NaN, which fails.
#pragma once

#include <string>
#include <vector>

#include "check/device_results.hpp"
#include "check/reference_run.hpp"

namespace kcv::glr::check {

struct Metric {
  std::string tensor;
  double ratio = 0.0;
  double limit = 0.0;
  bool pass = false;
};

/// RMS(got − want) / RMS(want); NaN if got has a non-finite value or the sizes differ;
/// 0 when both are all zero, +inf when only want is.
double relative_rms(const std::vector<double>& got, const std::vector<double>& want);

/// One Metric per output the member has: o, ht, dq, dk, dv, dh0, dg (gated), dbeta (delta rule).
std::vector<Metric> compare(const HostInputs& in, const DeviceResults& gpu,
                            const ReferenceResults& ref);

}  // namespace kcv::glr::check
