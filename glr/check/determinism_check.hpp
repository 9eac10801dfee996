// File: glr/check/determinism_check.hpp
// Bitwise determinism: forward + backward run `runs` times on the same inputs (a skewed varlen
// GVA problem), each run on freshly poisoned outputs and workspace; every output tensor must have
// the same bytes as in the first run.
#pragma once

#include "check/check_result.hpp"
#include "check/device_results.hpp"
#include "kcv/glr/member.hpp"

namespace kcv::glr::check {

CheckResult determinism(Member member, int runs, const Runner& run);

}  // namespace kcv::glr::check
