// File: glr/check/main.cpp
// glr_check: the self-checking harness of the sm_90a GLR kernels (issue 4 item 3) on a CUDA GPU.
// For every member and case it generates seeded fla-like inputs, runs the GPU forward and
// backward, runs the fp64 chunked reference on the CPU from the same rounded inputs, and prints
// fla's relative-RMS metric per tensor with PASS/FAIL; then the argument-validation,
// NaN-propagation and bitwise determinism (10 runs) checks. Exit code 0 only if everything
// passed (1: a check failed; 2: bad usage or no CUDA device).
//
//   glr_check [--tiny|--quick] [--out FILE] [--member NAME] [--threads N] [--runs N]
//             [--accuracy-only]
#include <cuda_runtime_api.h>

#include <iostream>
#include <string>

#include "check/device_run.hpp"
#include "check/harness.hpp"
#include "check/validation_check.hpp"

namespace {

std::string device_line() {
  int dev = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess)
    return "";
  std::string line = prop.name;
  line += ", sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
  line += ", " + std::to_string(prop.multiProcessorCount) + " SMs";
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  kcv::glr::check::HarnessOptions opt;
  if (!kcv::glr::check::parse_options(argc, argv, opt)) return 2;
  const std::string device = device_line();
  if (device.empty()) {
    for (const auto& c : kcv::glr::check::argument_validation())
      std::cout << (c.pass ? "PASS " : "FAIL ") << c.name << " " << c.detail << "\n";
    std::cout << "FAIL no CUDA device\n";
    return 2;
  }
  return kcv::glr::check::run_harness(opt, kcv::glr::check::run_device, device,
                                      kcv::glr::check::argument_validation());
}
