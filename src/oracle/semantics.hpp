// File: src/oracle/semantics.hpp
// What the profile decides, in one place: how inputs are read (FTZ/DAZ), how results are
// finished (overflow to Inf in the output type, FTZ of results), and max/min with NaN and
// signed zeros (IEEE 754-2019 maximum vs maxNum, -0 < +0 in both).
#pragma once

#include <vector>

#include "kcv/dtype.hpp"
#include "kcv/profile.hpp"
#include "kcv/tensor.hpp"

namespace kcv::oracle {

/// Exact fp64 values of t's logical elements (row-major, any layout); under `flush` subnormals of
/// t's dtype read as zero of the same sign.
std::vector<double> read_values(const HostTensor& t, bool flush);

/// x with its subnormal (in dtype t) replaced by a signed zero when `flush`.
double flush_if(DType t, double x, bool flush);

/// The reference value of an exact result y for output type t: +-Inf where y rounds to an
/// infinity in t, signed zero where the profile flushes and y rounds to a subnormal of t;
/// otherwise y itself (unrounded).
double finish_value(double y, DType t, const Profile& p);
/// y rounded to t, then flushed as finish_value does: the value a conforming kernel stores.
double finish_declared(double y, DType t, const Profile& p);

/// max(a, b) under the profile: NaN handling per p.nan_minmax, -0 < +0.
double max_of(double a, double b, const Profile& p);
double min_of(double a, double b, const Profile& p);
/// max(min(x, hi), lo) with the profile's max/min (so NaN -> hi under maxNum).
double clamp_of(double x, double lo, double hi, const Profile& p);

}  // namespace kcv::oracle
