// File: glr/tests/support/norms.hpp
// Norm-wise comparison of two tensors: ‖got − want‖₂ / ‖want‖₂ (‖got − want‖₂ when want = 0),
// the metric of the chunked-vs-oracle acceptance criterion.
#pragma once

#include <vector>

namespace kcv::glr::testing {

double relative_error(const std::vector<double>& got, const std::vector<double>& want);

/// ‖x‖₂.
double norm2(const std::vector<double>& x);

}  // namespace kcv::glr::testing
