// File: glr/check/check_result.hpp
// The verdict of one property check of glr_check (NaN propagation, determinism, argument
// validation): pass or fail, with a one-line detail that says what was seen.
#pragma once

#include <string>

namespace kcv::glr::check {

struct CheckResult {
  std::string name;
  bool pass = false;
  std::string detail;
};

}  // namespace kcv::glr::check
