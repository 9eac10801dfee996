// File: include/kcv/glr/error_model.hpp
// The one error model of the GLR kernels: the bound tau that kcv's judges (CMP-01, EXC-01) hold
// every output element to, |y − y*| ≤ tau, y* the fp64 chunked reference on the same inputs.
// Following kcv's model (include/kcv/tolerance.hpp):
//
//   tau_i = u_out·|y*_i|                       the output's one rounding to its dtype
//         + c·u_f32·(sqrt(N) + G)·S_i          fp32 accumulation of the chunk form
//         + c·σ_i                              the contract's declared roundings (precision.hpp)
//
// c = 4 (kcv's confidence constant); N = L + K + V + C (L the longest sequence), G the largest
// |chunk-local cumulative log-decay|; S_i = 2·RMS(y*) over the element's (sequence, head) slice,
// and for dg the larger of that and ||p||₂ + |Σp| over the terms p that the chunk form sums into
// dg_i (dg_terms). σ_i is the standard deviation of the first-order error that the declared
// operand roundings put on y_i, propagated through the stages in fp64 from the reference's own
// intermediates (declared_rounding_sigma). Its derivation, and the fp32 terms', is
// docs/glr/precision-contract.md. The forward outputs (o, final state) carry σ
// (declared_rounding_sigma), and so do the gradients (declared_backward_sigma).
// Nothing here looks at a candidate's output.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kcv/expected.hpp"
#include "kcv/glr/chunked.hpp"
#include "kcv/glr/precision.hpp"
#include "kcv/glr/problem.hpp"

namespace kcv::glr {

inline constexpr double kConfidence = 4.0;    ///< c
inline constexpr double kUnitFp32 = 0x1p-24;  ///< u_f32

/// The outputs of one call, in the layouts of problem.hpp.
enum class Output { kO, kFinalState, kDq, kDk, kDv, kDg, kDbeta, kDh0 };

/// The case numbers of the fp32 term.
struct ModelScale {
  std::int64_t depth = 0;  ///< N = L + K + V + C
  double log_decay = 0;    ///< G (0 without a gate)
};

/// N and G of a problem (g is read from p.g: [T, HV] or [T, HV, K]; empty = no gate).
ModelScale model_scale(const Problem& p, ChunkOptions options = {});

/// N and G of the token-serial fp32 evaluation (the decode kernel, glr/kernels/decode_kernel.cuh)
/// of p, judged against the fp64 token-serial oracle: N = 2·(L + K) and G = 0. Every token rounds
/// each state element twice (the decay product a·S, the update S' + k·δ), δ carries the K-term
/// contraction k·S' (delta rule) and o the K-term contraction q·S; the decay factor is one expf
/// of the token's own log-decay (≤ 2 ulp in CUDA's expf), not a difference of cumulative sums,
/// so the chunk form's G has no counterpart. docs/glr/verification.md ("The decode bound").
ModelScale decode_model_scale(const Problem& p);

/// c·u_f32·(sqrt(N) + G): the fp32 term per unit of S.
double accumulation_term(const ModelScale& m);

/// "N=…, sqrt(N)=…, G=…: accumulation term … x RMS(slice)", one line for reports.
std::string describe(const ModelScale& m);

/// Unit roundoff of an output's dtype in the kernels' interface: bf16 (2^-8) for o, dq, dk, dv,
/// dbeta; fp32 (2^-24) for the final state, dh0 and dg.
double output_unit_roundoff(Output out);

/// Shape of the output tensor `out` for a problem: (slices, elements per token, heads) as the
/// layouts of problem.hpp give them; gate_width = g's values per (token, value head).
struct OutputSlices {
  bool per_token = true;   ///< false: a state [N, HV, K·V]
  std::int64_t heads = 0;  ///< H (dq, dk) or HV
  std::int64_t width = 0;  ///< values per (token, head), or K·V per state
};
OutputSlices output_slices(Output out, const Shape& s, std::int64_t gate_width);

/// 2·RMS over each (sequence, head) slice of `ref` (non-finite values left out), per element.
std::vector<double> slice_scale(Output out, std::span<const double> ref, const Shape& s,
                                std::int64_t gate_width);

/// tau of every element of `ref` (non-finite elements get the slice term only). terms: dg's
/// ||p||₂ + |Σp| (dg only; non-finite entries ignored); sigma: the declared-rounding σ (empty:
/// none, the fp32 grade). u_out: the output dtype's unit roundoff.
[[nodiscard]] Expected<std::vector<double>> tau(Output out, std::span<const double> ref,
                                                const Shape& s, std::int64_t gate_width,
                                                const ModelScale& m, double u_out,
                                                std::span<const double> terms = {},
                                                std::span<const double> sigma = {});

/// dg's terms, per element of dg [T, HV, gate width]: scale = ||p||₂ + |Σp| and total = Σp over
/// the row products q_s·dq_s − k_s·dk_s (v_s·dv_s for a scalar gate with the delta rule) of the
/// chunk's rows s ≥ t and the boundary products S_e ⊙ dS_e of the chunk's end state, per value
/// head (before GVA's group sum). Σp equals dg for ssd, gla, gdn; for kda it is a proxy of the
/// same size.
struct DgTerms {
  std::vector<double> scale;
  std::vector<double> total;
};
[[nodiscard]] Expected<DgTerms> dg_terms(Member member, const Problem& p, const Cotangents& cot,
                                         ChunkOptions options = {});
/// The same from the gradients `grads` of chunked_backward on `p` itself, for a caller that has
/// them already (one backward instead of two). @pre p.shape.qk_heads == p.shape.v_heads (a
/// problem with q, k per value head, e.g. one (sequence, value head) slice).
[[nodiscard]] Expected<DgTerms> dg_terms(Member member, const Problem& p, const Cotangents& cot,
                                         const Gradients& grads, ChunkOptions options = {});

/// σ of every element of o and of the final state (in p.layout) under the declared roundings of
/// the contract's forward products and state carry (all zero for the fp32 grade).
struct ForwardSigma {
  std::vector<double> o;
  std::vector<double> final_state;
};
[[nodiscard]] Expected<ForwardSigma> declared_rounding_sigma(Member member, const Problem& p,
                                                             const PrecisionContract& contract,
                                                             ChunkOptions options = {});

/// tau of o and the final state under a contract, for reference outputs `ref`.
struct ForwardBounds {
  std::vector<double> o;
  std::vector<double> final_state;
};
[[nodiscard]] Expected<ForwardBounds> forward_bounds(Member member, const Problem& p,
                                                     const Outputs& ref,
                                                     const PrecisionContract& contract,
                                                     ChunkOptions options = {});

/// σ of every element of dq, dk, dv, dg, dbeta and dh0 (problem layouts) under the declared
/// roundings of the contract's forward products (through the states the backward reads) and
/// backward products, fp32 carries.
/// @pre q, k, v and cot.d_o are exact in the formats the contract reads them in (else an error);
/// the contract reads dS in one format (scan_state.b = grad_key.b) and, with the delta rule, dΔ, H
/// and Δ in one format each (precision-contract.md §6).
/// Derivation: docs/glr/precision-contract.md §6.
struct BackwardSigma {
  std::vector<double> dq, dk, dv, dg, dbeta, dh0;
};
[[nodiscard]] Expected<BackwardSigma> declared_backward_sigma(Member member, const Problem& p,
                                                              const Cotangents& cot,
                                                              const PrecisionContract& contract,
                                                              ChunkOptions options = {});

/// tau of dq, dk, dv, dg (gated members; empty otherwise), dbeta (delta rule; empty otherwise) and
/// dh0 under a contract, for reference
/// gradients `ref` (chunked_backward on the same inputs). Same members and @pre as
/// declared_backward_sigma.
struct BackwardBounds {
  std::vector<double> dq, dk, dv, dg, dbeta, dh0;
};
[[nodiscard]] Expected<BackwardBounds> backward_bounds(Member member, const Problem& p,
                                                       const Cotangents& cot, const Gradients& ref,
                                                       const PrecisionContract& contract,
                                                       ChunkOptions options = {});

}  // namespace kcv::glr
