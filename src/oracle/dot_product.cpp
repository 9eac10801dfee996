// File: src/oracle/dot_product.cpp
// The shared dot-product element (see the header for the bound). Whether products are rounded
// is decided from the inputs' significand widths: two p-bit values multiply exactly in a type
// with at least 2p significand bits (fp16/bf16 in fp32, fp32 in fp64).
#include "oracle/dot_product.hpp"

#include <algorithm>
#include <cmath>

#include "oracle/semantics.hpp"

namespace kcv::oracle {

namespace {

constexpr int kTf32Bits = 11;
constexpr double kUTf32 = 0x1p-11;

bool products_rounded(const EvalContext& ctx, DType prod) {
  int widest = 0;
  for (DType t : ctx.in_dtypes) widest = std::max(widest, significand_bits(t));
  return 2 * widest > significand_bits(prod);
}

}  // namespace

DotElement::DotElement(const EvalContext& ctx, bool conv)
    : ctx_(ctx), tf32_(ctx.tf32(conv)), declared_(declared_sum(ctx.models[0])) {}

void DotElement::add(double a, double b) {
  exact_.add_product(a, b);
  if (tf32_) {
    declared_.add_product(round_to_bits(a, kTf32Bits), round_to_bits(b, kTf32Bits));
  } else {
    declared_.add_product(a, b);
  }
}

void DotElement::write(OracleOutput& out, std::size_t i) const {
  const PrecisionModel& m = ctx_.models[0];
  const Profile& p = *ctx_.profile;
  const double n = static_cast<double>(exact_.count());
  const double s = exact_.sum();
  out.value[i] = finish_value(s, out.dtype, p);
  out.declared[i] = finish_declared(declared_.value(), out.dtype, p);
  out.n_terms[i] = n;
  if (!std::isfinite(out.value[i])) {
    out.tau[i] = 0.0;
    return;
  }
  const double l2 = exact_.l2();
  double tau = rounding_bound(m, s, 0.0) +
               accumulation_bound(m, n, l2, std::fabs(s), exact_.sum_abs());
  const DType prod = product_dtype(m);
  if (products_rounded(ctx_, prod)) {
    const double u_p = unit_roundoff(prod);
    tau += m.deterministic_bound ? u_p * exact_.sum_abs() : m.c * u_p * l2;
  }
  tau += n * 0.5 * min_subnormal(prod);  // products that underflow (bf16 x bf16 in fp32)
  if (tf32_) tau += m.c * kUTf32 * (l2 + std::fabs(s));
  if (p.flush_subnormals) tau += n * min_normal(m.compute_dtype);
  out.tau[i] = tau;
}

}  // namespace kcv::oracle
