// File: glr/check/main.cpp
// glr_check: the launcher's argument validation (validation_check.hpp) — every bad argument is
// rejected before the device is touched, with a message naming the field. Needs no GPU. The
// kernels' gates (CMP-01, ORD-02, EXC-01, RES-02) run through kcv's pipeline instead:
// `kcv verify --candidate libkcv_glr_cuda_candidate.so` (docs/glr/verification.md).
// Exit status 0 when every check passed, 1 otherwise.
#include <iostream>

#include "check/validation_check.hpp"

int main() {
  int failed = 0;
  for (const auto& c : kcv::glr::check::argument_validation()) {
    std::cout << (c.pass ? "PASS " : "FAIL ") << c.name << " " << c.detail << "\n";
    failed += c.pass ? 0 : 1;
  }
  std::cout << (failed == 0 ? "ALL PASS" : std::to_string(failed) + " FAILED") << "\n";
  return failed == 0 ? 0 : 1;
}
