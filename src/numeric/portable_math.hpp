// File: src/numeric/portable_math.hpp
// log, exp and cos(2*pi*u) built only from IEEE +, -, *, / and exact scalings, evaluated in a
// fixed order. libm results may differ in the last bit between C libraries and versions, and
// generated probe inputs must be identical bit for bit on every machine, so the generators use
// these instead. Accuracy is a few ulp of fp64, far below the rounding to any input dtype.
#pragma once

namespace kcv::numeric {

/// Natural logarithm. @pre x > 0 and finite
double portable_log(double x);
/// e^x; 0 below -745, +inf above 709.78.
double portable_exp(double x);
/// cos(2 * pi * u) for u in [0, 1).
double portable_cos_2pi(double u);

}  // namespace kcv::numeric
