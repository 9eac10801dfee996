// File: src/cli/glr_options.cpp
// The flags that only a kernel of a GLR op reads (docs/glr/verification.md): the precision grades,
// the case list and probe budget of CMP-01, ORD-02's repetitions, the reference's threads and the
// deadline per call.
#include <fmt/format.h>

#include "cli/cli_error.hpp"
#include "cli/tools.hpp"

namespace kcv::cli {

glr::GlrOptions glr_options(const CliOptions& o) {
  glr::GlrOptions g;
  g.grades.clear();
  std::string rest = o.grades;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string word = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    if (word == "fp32") {
      g.grades.push_back(glr::Grade::kFp32);
    } else if (word == "bf16") {
      g.grades.push_back(glr::Grade::kBf16);
    } else {
      usage_error(fmt::format("--grade: unknown grade '{}' (fp32, bf16)", word));
    }
  }
  if (g.grades.empty()) usage_error("--grade: no grade given (fp32, bf16)");
  if (o.glr_cases == "small") {
    g.cases = glr::CaseList::kSmall;
  } else if (o.glr_cases != "full") {
    usage_error(fmt::format("--glr-cases: unknown case list '{}' (small, full)", o.glr_cases));
  }
  if (o.max_tokens < 0) usage_error("--max-tokens: must be >= 0");
  if (o.runs < 2) usage_error("--runs: ORD-02 needs at least 2 repetitions");
  if (o.timeout_s < 1) usage_error("--timeout: must be at least 1 second");
  g.max_tokens = o.max_tokens;
  g.runs = o.runs;
  g.threads = o.threads;
  g.timeout_ms = o.timeout_s * 1000;
  return g;
}

void add_glr_run_options(CLI::App& cmd, CliOptions& o) {
  cmd.add_option("--threads", o.threads, "GLR ops: threads of the fp64 reference (0: all cores)")
      ->capture_default_str();
  cmd.add_option("--timeout", o.timeout_s, "GLR ops: seconds each call may take (forked executor)")
      ->capture_default_str();
}

}  // namespace kcv::cli
