// File: tests/e2e/make_report_store.cpp
// Writes the hand-computed ten-kernel audit store of tests/unit/report/audit_report_store.hpp
// to argv[1], for the `kcv report` end-to-end test (the same store the unit tests check, so
// the e2e test can assert the same numbers through the command line and the browser).
#include <cstdio>
#include <exception>
#include <filesystem>

#include "unit/report/audit_report_store.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s STORE.db\n", argv[0]);
    return 2;
  }
  try {
    std::filesystem::remove(argv[1]);
    kcv::audit_report::testing::write_report_store(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_report_store: %s\n", e.what());
    return 1;
  }
  return 0;
}
