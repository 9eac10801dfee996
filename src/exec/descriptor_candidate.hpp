// File: src/exec/descriptor_candidate.hpp
// The Candidate behind every kcv_kernel descriptor, bundled or loaded from a shared library.
// `keep_alive` owns whatever must outlive the descriptor's function pointer and strings (the
// dlopen handle of a shared library); it is released with the candidate.
#pragma once

#include <memory>
#include <string>

#include "kcv/candidate.hpp"

namespace kcv::exec {

Expected<std::unique_ptr<Candidate>> make_descriptor_candidate(const kcv_kernel& k,
                                                               const std::string& base_dir,
                                                               std::shared_ptr<void> keep_alive);

}  // namespace kcv::exec
