// File: include/kcv/candidate.hpp
// A candidate is a kernel kcv can call on host buffers. Two kinds ship: in-process C++ objects
// (for tests and bundled examples) and kernels loaded from a shared library through the C ABI of
// kcv_kernel.h. Both are called the same way: a kcv_kernel descriptor.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kcv/contract.hpp"
#include "kcv/expected.hpp"
#include "kcv/kcv_kernel.h"

namespace kcv {

class Candidate {
 public:
  virtual ~Candidate() = default;
  virtual const std::string& name() const = 0;
  virtual const std::string& op() const = 0;
  virtual const Contract& contract() const = 0;
  /// Path of device code for RES-02 (PTX, cubin or ptxas log), if any.
  virtual std::optional<std::string> device_code() const = 0;
  /// Runs the kernel once. Returns the kernel's status (0 = success); `message` gets the
  /// kernel's error text. May throw (in-process C++ kernels); executors catch.
  virtual int call(const std::vector<kcv_tensor>& inputs, std::vector<kcv_tensor>& outputs,
                   const std::map<std::string, double>& params, const LaunchConfig& launch,
                   std::string* message) = 0;
};

/// A candidate from a descriptor (bundled kernels, tests). The contract JSON is parsed now.
Expected<std::unique_ptr<Candidate>> make_candidate(const kcv_kernel& k, std::string base_dir = {});

/// Loads a shared library and picks a kernel: by `kernel` name when given, else by `op` when
/// given, else the only kernel. Clear errors for a missing file, a missing kcv_kernels symbol,
/// an empty table, ambiguous or unknown names.
Expected<std::unique_ptr<Candidate>> load_shared_library_candidate(const std::string& path,
                                                                   const std::string& kernel,
                                                                   const std::string& op);
/// Names and ops of every kernel in a library (for `kcv verify --list`).
Expected<std::vector<std::pair<std::string, std::string>>> list_library_kernels(const std::string& path);

}  // namespace kcv
