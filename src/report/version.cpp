// File: src/report/version.cpp
// The release string written into reports and printed by `kcv --version`. KCV_VERSION comes
// from the project() version in the top-level CMakeLists.txt, so there is one place to bump it.
#include "kcv/report.hpp"

#ifndef KCV_VERSION
#error "KCV_VERSION must be defined by the build (project version)"
#endif

namespace kcv {

std::string_view kcv_version() { return KCV_VERSION; }

}  // namespace kcv
