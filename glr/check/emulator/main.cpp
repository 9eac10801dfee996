// File: glr/check/emulator/main.cpp
// glr_emulate: the GLR stage kernels compiled as host C++ and run on the CPU (emulated_device.hpp)
// against the fp64 chunked reference, with the same cases, metric, NaN-propagation and
// determinism checks as glr_check. It needs no GPU, so CI runs it (--quick); under
// ThreadSanitizer with --cta-threads 256 it checks the kernels' barriers.
//
//   glr_emulate [--tiny|--quick] [--cta-threads N] [--out FILE] [--member NAME] [--threads N]
#include <cstdlib>
#include <iostream>
#include <string>

#include "check/emulator/emulated_device.hpp"
#include "check/harness.hpp"

int main(int argc, char** argv) {
  using namespace kcv::glr::check;
  HarnessOptions opt;
  opt.cases = CaseList::kQuick;
  opt.runs = 2;
  int cta_threads = 1;
  bool take_value = false;
  const auto extra = [&](const std::string& a) {
    if (take_value) {
      cta_threads = std::atoi(a.c_str());
      take_value = false;
      return true;
    }
    if (a == "--cta-threads") return take_value = true;
    if (a == "--full") {
      opt.cases = CaseList::kFull;
      return true;
    }
    return false;
  };
  if (!parse_options(argc, argv, opt, extra) || take_value || cta_threads < 1) return 2;
  if (cta_threads > 1) {  // the threaded emulation is for races, not coverage: keep it small
    opt.nan_check = false;
    opt.determinism = false;
  }
  const std::string device = "CPU emulation of the CUDA kernels, " + std::to_string(cta_threads) +
                             " host thread(s) per CTA";
  return run_harness(opt, [&](const HostInputs& in) { return run_emulated(in, cta_threads); },
                     device, {});
}
