// File: glr/reference/precision.cpp
// The two grades of include/kcv/glr/precision.hpp, the roundings' unit roundoffs, RN-even rounding
// of an fp32 value to bf16 / TF32 by bit arithmetic (what __float2bfloat16_rn and cvt.rna... do
// for finite values; TF32 here is RN-even like cuBLAS's conversion), and names for reports.
#include "kcv/glr/precision.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace kcv::glr {
namespace {

// Number of low fp32 mantissa bits a rounding drops.
int dropped_bits(Rounding r) { return r == Rounding::kBf16 ? 16 : (r == Rounding::kTf32 ? 13 : 0); }

}  // namespace

bool PrecisionContract::rounds_backward() const {
  for (std::size_t p = kForwardProductCount; p < kProductCount; ++p)
    if (products[p].a != Rounding::kNone || products[p].b != Rounding::kNone) return true;
  return false;
}

PrecisionContract contract_for(Grade grade) {
  PrecisionContract c;
  c.grade = grade;
  if (grade != Grade::kBf16) return c;
  for (OperandRounding& p : c.products) p = {Rounding::kBf16, Rounding::kBf16};
  c.u_addend = Rounding::kBf16;
  return c;
}

double unit_roundoff(Rounding r) {
  return r == Rounding::kBf16 ? 0x1p-8 : (r == Rounding::kTf32 ? 0x1p-11 : 0.0);
}

float round_to(Rounding r, float x) {
  const int drop = dropped_bits(r);
  if (drop == 0 || !std::isfinite(x)) return x;
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  const std::uint32_t half = (1u << (drop - 1)) - 1u;
  u += half + ((u >> drop) & 1u);
  u &= ~((1u << drop) - 1u);
  float out;
  std::memcpy(&out, &u, sizeof out);
  return out;
}

bool representable(Rounding r, double x) {
  const float f = static_cast<float>(x);
  if (static_cast<double>(f) != x) return false;
  return round_to(r, f) == f;
}

std::string_view name(Grade g) {
  switch (g) {
    case Grade::kFp32:
      return "fp32";
    case Grade::kBf16:
      return "bf16";
    case Grade::kCustom:
      break;
  }
  return "custom";
}

std::string_view name(Rounding r) {
  return r == Rounding::kBf16 ? "bf16" : (r == Rounding::kTf32 ? "tf32" : "fp32");
}

std::string_view name(Product p) {
  static constexpr std::array<std::string_view, kProductCount> kNames = {
      "gram_qk",    "gram_kk",      "solve",        "wy_w",         "wy_u",
      "state_w",    "state_update", "output_inter", "output_intra", "local_delta_grad",
      "scan_state", "scan_query",   "scan_w",       "grad_query",   "grad_key",
      "grad_w",     "grad_a",       "gram_vjp",     "wy_grad_t",    "wy_grad_x",
      "solve_vjp"};
  return kNames[static_cast<std::size_t>(p)];
}

}  // namespace kcv::glr
