// File: include/kcv/glr/oracle.hpp
// fp64 token-serial oracle of the general gated linear recurrence (gdn-spec.md §1), per sequence
// and value head:
//   S_t = (I − k_t (b_t ⊙ k_t)^T) · Diag(exp(g_t)) · S_{t−1} + k_t (w_t ⊙ v_t)^T
//   o_t = scale · S_t^T q_t
// evaluated literally one token at a time in the equivalent "delta" form
//   S' = Diag(exp(g_t)) S_{t−1};  δ_t = w_t ⊙ v_t − S'^T (b_t ⊙ k_t);  S_t = S' + k_t δ_t^T.
// The backward is the analytic adjoint recurrence run in reverse time (no autograd): it
// carries dS_t = ∂L/∂S_t from the final-state gradient back to dh0. The general form takes the
// erase b [T, HV, K] and write w [T, HV, V] strengths as vectors; the member functions build
// them from β (b = w = β·1 with the delta rule, else b = 0, w = 1) and fold their gradients back
// into dβ_t = Σ_d ∂L/∂b_{t,d} + Σ_e ∂L/∂w_{t,e}.
#pragma once

#include <vector>

#include "kcv/expected.hpp"
#include "kcv/glr/member.hpp"
#include "kcv/glr/problem.hpp"

namespace kcv::glr {

/// The general recurrence: any gate kind, vector erase/write strengths.
struct Recurrence {
  Shape shape;
  GateKind gate = GateKind::kNone;
  std::vector<double> q, k, v, g;
  std::vector<double> erase;  ///< b, [T, HV, K]
  std::vector<double> write;  ///< w, [T, HV, V]
  std::vector<double> h0;     ///< empty = zero initial state
  double scale = 1.0;
  StateLayout layout = StateLayout::kKV;
};

struct RecurrenceGradients {
  std::vector<double> dq, dk, dv, dg, d_erase, d_write, dh0;
};

/// Forward of the general recurrence.
/// @post o and final_state as in the file comment; final_state in r.layout.
[[nodiscard]] Expected<Outputs> run_recurrence(const Recurrence& r);

/// Reverse-time adjoint of run_recurrence for L = ⟨o, d_o⟩ + ⟨S_final, d_final_state⟩.
[[nodiscard]] Expected<RecurrenceGradients> recurrence_backward(const Recurrence& r,
                                                                const Cotangents& cot);

/// The general recurrence a member computes: gate kind from traits(member), b and w from β.
[[nodiscard]] Expected<Recurrence> as_recurrence(Member member, const Problem& problem);

/// Token-serial forward of a member (as_recurrence + run_recurrence).
[[nodiscard]] Expected<Outputs> oracle_forward(Member member, const Problem& problem);

/// Token-serial backward of a member: dq, dk, dv, dg (if gated), dβ (if delta rule), dh0.
[[nodiscard]] Expected<Gradients> oracle_backward(Member member, const Problem& problem,
                                                  const Cotangents& cot);

}  // namespace kcv::glr
