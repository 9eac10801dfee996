// File: src/contract/call_status.cpp
// Names of CallStatus values, as reports and messages print them.
#include "kcv/call.hpp"

namespace kcv {

std::string_view call_status_name(CallStatus s) {
  switch (s) {
    case CallStatus::kOk:
      return "ok";
    case CallStatus::kKernelError:
      return "kernel_error";
    case CallStatus::kException:
      return "exception";
    case CallStatus::kCrash:
      return "crash";
    case CallStatus::kTimeout:
      return "timeout";
    case CallStatus::kBadOutput:
      return "bad_output";
  }
  return "unknown";
}

}  // namespace kcv
