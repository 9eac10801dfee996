// File: python/src/core_oracle.hpp
// kcv._core.Oracle: a probe's oracle entries (the dicts error_model.oracle_entry makes) converted
// once into the judges' OracleResult: values widened to fp64 and tau expanded per element. The
// audit judges a probe several times (gates, profiles); converting the entries for each judge
// call cost an fp64 value, tau and declared array of fresh memory per call.
#pragma once

#include "core_common.hpp"
#include "kcv/op.hpp"

namespace kcv::py {

struct PreparedOracle {
  OracleResult result;
};

/// The OracleResult `oracle` stands for: a kcv._core.Oracle's own (read in place), or `scratch`
/// filled from a list of entry dicts.
const OracleResult& oracle_of(nb::handle oracle, OracleResult& scratch);

}  // namespace kcv::py
