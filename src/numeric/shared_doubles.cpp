// File: src/numeric/shared_doubles.cpp
#include "kcv/shared_doubles.hpp"

namespace kcv {

std::vector<double> SharedDoubles::release() {
  std::vector<double> out;
  if (p_ != nullptr && p_.use_count() == 1) out = std::move(*p_);
  p_.reset();
  return out;
}

const std::vector<double>& SharedDoubles::none() {
  static const std::vector<double> none;
  return none;
}

}  // namespace kcv
