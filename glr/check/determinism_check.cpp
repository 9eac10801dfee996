// File: glr/check/determinism_check.cpp
// The determinism check of determinism_check.hpp.
#include "check/determinism_check.hpp"

#include <string>

#include "check/inputs.hpp"

namespace kcv::glr::check {

CheckResult determinism(Member member, int runs, const Runner& run_problem) {
  CheckResult r{"determinism/", false, ""};
  r.name += name(member);
  CaseSpec spec;
  spec.lengths = {1, 150, 7, 64, 3, 1000, 65};
  spec.varlen = true;
  spec.qk_heads = 2;
  spec.v_heads = 4;
  spec.key_dim = 100;
  spec.value_dim = 128;
  spec.seed = 99;
  const HostInputs in = make_inputs(member, spec);
  Expected<DeviceResults> first = run_problem(in);
  if (!first) {
    r.detail = first.error().to_string();
    return r;
  }
  for (int run = 1; run < runs; ++run) {
    Expected<DeviceResults> again = run_problem(in);
    if (!again) {
      r.detail = again.error().to_string();
      return r;
    }
    for (const DeviceTensor& t : first->tensors) {
      const DeviceTensor* u = again->find(t.name);
      if (u == nullptr || u->bytes != t.bytes) {
        r.detail = t.name + " differs between run 0 and run " + std::to_string(run);
        return r;
      }
    }
  }
  r.pass = true;
  r.detail = std::to_string(runs) + " runs of forward + backward, all outputs bitwise identical";
  return r;
}

}  // namespace kcv::glr::check
