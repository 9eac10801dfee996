// File: glr/check/reference_run.hpp
// The fp64 chunked reference (kcv/glr/chunked.hpp) on a whole HostInputs problem, sliced into
// independent (sequence, value head) problems that run on a pool of std::threads: each slice has
// one sequence, one q/k head (the value head's GVA head) and one value head. The slices' results
// are scattered back serially; dq and dk add up over a group's value heads there.
#pragma once

#include "check/inputs.hpp"
#include "kcv/expected.hpp"
#include "kcv/glr/problem.hpp"

namespace kcv::glr::check {

struct ReferenceResults {
  Outputs fwd;
  Gradients grads;
};

[[nodiscard]] Expected<ReferenceResults> run_reference(const HostInputs& in, int threads);

}  // namespace kcv::glr::check
