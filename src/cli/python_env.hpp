// File: src/cli/python_env.hpp
// The Python that kcv's Python parts run under (`kcv audit`'s orchestrator, the KernelBench
// workers `kcv replay --store` starts): $KCV_PYTHON, else the interpreter the build was
// configured with, else `python3`; and, in a build tree, the build's extension modules and the
// source tree's python/ in front of PYTHONPATH, so nothing needs `pip install` there.
#pragma once

#include <string>

namespace kcv::cli {

std::string python_interpreter();
/// Puts the build tree's python/ directories in front of PYTHONPATH (nothing outside a build tree).
void use_build_tree_python();

}  // namespace kcv::cli
