// File: include/kcv/report.hpp
// Verdict reports: terminal table, JSON (schema in docs/report_schema.md, versioned by
// kReportSchemaVersion), JUnit XML (one testsuite per kernel, one testcase per gate).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kcv/verify.hpp"

namespace kcv {

inline constexpr int kReportSchemaVersion = 1;

/// The kcv release ("0.1.0"), as written into reports and printed by `kcv --version`.
std::string_view kcv_version();

std::string render_table(const VerifyReport& r, bool color = false);
std::string render_json(const std::vector<VerifyReport>& reports);
std::string render_junit(const std::vector<VerifyReport>& reports);

}  // namespace kcv
