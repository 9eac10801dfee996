// File: src/audit/status.cpp
// Kernel status names: the strings stored in kernels.status (a CHECK constraint of each schema
// version lists them: a new status needs a store migration, src/audit/schema.cpp), and which of
// them are final. pending and running are the only unfinished states; resume redoes both, since
// a running kernel's verdicts were never committed.
#include <fmt/format.h>

#include <array>
#include <utility>

#include "audit/store_impl.hpp"
#include "kcv/audit.hpp"

namespace kcv::audit {
namespace {

constexpr std::array<std::pair<KernelStatus, std::string_view>, 16> kNames = {{
    {KernelStatus::kPending, "pending"},
    {KernelStatus::kRunning, "running"},
    {KernelStatus::kOk, "ok"},
    {KernelStatus::kCrash, "crash"},
    {KernelStatus::kTimeout, "timeout"},
    {KernelStatus::kCompileError, "compile_error"},
    {KernelStatus::kImportError, "import_error"},
    {KernelStatus::kMalformed, "malformed"},
    {KernelStatus::kError, "error"},
    {KernelStatus::kRuntimeError, "runtime_error"},
    {KernelStatus::kBadOutput, "bad_output"},
    {KernelStatus::kReferenceError, "reference_error"},
    {KernelStatus::kEnvironment, "environment"},
    {KernelStatus::kPoison, "poison"},
    {KernelStatus::kLoadKilled, "load_killed"},
    {KernelStatus::kOutOfMemory, "out_of_memory"},
}};

}  // namespace

std::string_view status_name(KernelStatus s) {
  for (const auto& [status, name] : kNames) {
    if (status == s) return name;
  }
  return "error";
}

Expected<KernelStatus> parse_status(std::string_view name) {
  for (const auto& [status, n] : kNames) {
    if (n == name) return status;
  }
  return make_error(ErrorCode::kParse, fmt::format("status: unknown kernel status '{}'", name));
}

bool is_final(KernelStatus s) { return s != KernelStatus::kPending && s != KernelStatus::kRunning; }

const std::string& final_status_list() {
  static const std::string list = [] {
    std::string out;
    for (const auto& [status, name] : kNames) {
      if (!is_final(status)) continue;
      out += fmt::format("{}'{}'", out.empty() ? "(" : ",", name);
    }
    return out + ")";
  }();
  return list;
}

}  // namespace kcv::audit
