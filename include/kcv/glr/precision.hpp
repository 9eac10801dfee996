// File: include/kcv/glr/precision.hpp
// The declared precision contract of a GLR kernel: for every matrix product of the chunk algebra,
// which of its two operands the kernel rounds (to bf16 or TF32) before the product, with fp32
// accumulation; and the precision of the state carried from one chunk to the next. The verifier's
// bound (error_model.hpp) gains one term for each declared rounding, so a kernel is judged
// against what it says it does; a kernel that rounds more than it declares fails.
//
// Operands are named as the fp64 chunked reference forms them (chunked.hpp, gdn-spec.md §4):
// Q̄ = Q ⊙ E, K̄ = K ⊙ R, X = diag(β)(K ⊙ E), Ṽ = diag(β) V, A^qk = P(Q, K, incl.),
// L = diag(β) P(K, K, strict), T = (I + L)⁻¹, W = T X, U = T Ṽ, Δ = U − W H, H the state entering
// a chunk. A kernel that moves a per-row decay factor from one operand to the other (fla rounds
// Kᵀ and R ⊙ Δ where the reference forms K̄ᵀ Δ) makes a rounding of the same size, row by row.
// The derivation of each term is docs/glr/precision-contract.md.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace kcv::glr {

/// What an operand is rounded to before a product. kNone: used at fp32 (CUDA-core FMAs, or a
/// 3-way split-bf16 tensor-core product, whose error is that of fp32).
enum class Rounding { kNone, kTf32, kBf16 };

/// The products of the chunk algebra, forward then backward (gdn-spec.md §5–§9).
enum class Product {
  // forward
  kGramQK,       ///< A^qk = P(Q, K): operands Q and K (per-channel gates: the anchored factors)
  kGramKK,       ///< P(K, K) of L: operands K and K (per-channel gates: the anchored factors)
  kSolve,        ///< the products L·T of the forward substitution T = I − StrictLower(L T)
  kWyW,          ///< W = T X: operands T, X
  kWyU,          ///< U = T Ṽ: operands T, Ṽ
  kStateW,       ///< W H inside Δ = U − W H: operands W, H
  kStateUpdate,  ///< K̄ᵀ Δ of H' = Diag(e_last) H + K̄ᵀ Δ: operands K̄, Δ
  kOutputInter,  ///< Q̄ H of the output: operands Q̄, H
  kOutputIntra,  ///< A^qk Δ of the output: operands A^qk, Δ
  // backward
  kLocalDeltaGrad,  ///< A^qkᵀ dO
  kScanState,       ///< K̄ dH_end
  kScanQuery,       ///< Q̄ᵀ dO
  kScanW,           ///< Wᵀ dΔ
  kGradQuery,       ///< dO Hᵀ
  kGradKey,         ///< Δ dH_endᵀ
  kGradW,           ///< dΔ Hᵀ
  kGradA,           ///< dO Δᵀ
  kGramVjp,         ///< dP B and dPᵀ A of both decayed Grams
  kWyGradT,         ///< dW Xᵀ + dΔ Ṽᵀ
  kWyGradX,         ///< Tᵀ dW and Tᵀ dΔ
  kSolveVjp,        ///< Tᵀ dT Tᵀ
};

inline constexpr std::size_t kProductCount = 21;
inline constexpr std::size_t kForwardProductCount = 9;  ///< kGramQK … kOutputIntra

/// Both operands' rounding of one product (a: left, b: right operand as listed above).
struct OperandRounding {
  Rounding a = Rounding::kNone;
  Rounding b = Rounding::kNone;
};

/// The two verified grades. kBf16: every operand of every product rounded to bf16 once (the
/// precision class of fla's Triton kernels: bf16 MMA operands, fp32 accumulation). kFp32: no
/// operand rounded (fp32 arithmetic, or a split-bf16 product as accurate as fp32). kCustom: any
/// other declaration.
enum class Grade { kFp32, kBf16, kCustom };

struct PrecisionContract {
  Grade grade = Grade::kFp32;
  std::array<OperandRounding, kProductCount> products{};
  /// U as the state pass reads it in Δ = U − W H, where it is an addend, not a product operand
  /// (fla stores U in bf16 between its WY kernel and its state kernel).
  Rounding u_addend = Rounding::kNone;
  /// The state kept from one chunk to the next (fp32 in both grades; kBf16 would declare a state
  /// stored in bf16 across chunks).
  Rounding state_carry = Rounding::kNone;

  OperandRounding operator[](Product p) const { return products[static_cast<std::size_t>(p)]; }
  OperandRounding& operator[](Product p) { return products[static_cast<std::size_t>(p)]; }
  /// True when any backward product rounds an operand.
  bool rounds_backward() const;
};

/// The contract of a grade (kCustom: the fp32 contract, relabelled, for the caller to edit).
PrecisionContract contract_for(Grade grade);

/// Unit roundoff of a rounding: bf16 2^-8, TF32 2^-11, none 0.
double unit_roundoff(Rounding r);

/// RN-even rounding of an fp32 value to bf16 / TF32 (kept in an fp32); NaN stays NaN.
float round_to(Rounding r, float x);

/// True when x (fp64) is exactly an fp32 value whose rounding `r` leaves it unchanged.
bool representable(Rounding r, double x);

std::string_view name(Grade g);     ///< "fp32", "bf16", "custom"
std::string_view name(Rounding r);  ///< "fp32", "tf32", "bf16"
std::string_view name(Product p);   ///< "gram_qk", "state_w", ...

}  // namespace kcv::glr
