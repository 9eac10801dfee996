// File: glr/reference/chunk_backward.hpp
// Backward stages of one chunk, gdn-spec.md §6 (GDN), §7 (KDA) and §9 (GLA, SSD, LA), written
// once. Notation: H = state entering the chunk, dH_end = ∂L/∂(state leaving the chunk) (fla's
// dh[n]), dO = the chunk's output gradient rows.
//   B1  dΔ^loc = scale · A^qkᵀ dO
//   B2  (serial, reverse over chunks) dΔ = dΔ^loc + K̄ dH_end;
//       dH_entry = Diag(e_last) dH_end + scale Q̄ᵀ dO − Wᵀ dΔ   (no W term without delta rule)
//   B3  dQ = scale (dO Hᵀ) ⊙ E;  dK = (Δ dH_endᵀ) ⊙ R;  dW = −dΔ Hᵀ;
//       dA^qk = scale · Tril_incl(dO Δᵀ) (w.r.t. the unscaled A^qk) and its decayed-Gram VJP;
//       gate terms Q ⊙ dQ_inter − K ⊙ dK_inter, and on the last valid row
//       e_last ⊙ Σ_v (H ⊙ dH_end) + Σ_j K_j ⊙ dK_inter_j
//   B4  (delta rule) dT = StrictLower(dW Xᵀ + dΔ Ṽᵀ);  dX = Tᵀ dW;  dṼ = Tᵀ dΔ;
//       dL = −StrictLower(Tᵀ dT Tᵀ);  dK, dβ, dG from X = diag(β)(K⊙E), Ṽ = diag(β)V and
//       L = diag(β) P(K, K, strict);  dV = β ⊙ dṼ   (dV = dΔ without delta rule)
//   B5  the sums above; B6 (the caller) dg = reverse_cumsum(dG).
// The last-row term Σ_j K_j ⊙ dK_inter_j and the row term −K_j ⊙ dK_inter_j cancel exactly for
// j = last (R_last = 1); both are left out for that row, for the same reason as the diagonal of
// the Gram VJP (decayed_gram.hpp): no O(1) pair that cancels may enter dG.
#pragma once

#include <vector>

#include "glr/oracle/matrix.hpp"
#include "glr/reference/chunk_forward.hpp"

namespace kcv::glr::detail {

/// B1.
Matrix local_delta_grad(const ChunkFactors& f, const Matrix& d_o, double scale);

struct ScanStep {
  Matrix d_delta;  ///< dΔ of this chunk ("dv2")
  Matrix d_entry;  ///< ∂L/∂H, the gradient of the state entering this chunk
};

/// B2, one chunk of the reverse scan.
ScanStep dh_scan_step(const ChunkFactors& f, const Matrix& d_delta_local, const Matrix& d_end,
                      const Matrix& d_o, double scale, bool delta_rule);

/// What one chunk contributes to the input gradients (before B6 and the GVA group sum).
struct ChunkGrads {
  Matrix dq, dk, dv;
  Matrix dw;                  ///< ∂L/∂W (delta rule)
  Matrix d_gate;              ///< dG, w.r.t. the cumulative gate (rows × gate width)
  std::vector<double> dbeta;  ///< delta rule only
};

/// The state-dependent context of one chunk's backward.
struct ChunkState {
  const Matrix& h;        ///< state entering the chunk
  const Matrix& d_end;    ///< ∂L/∂(state leaving the chunk)
  const Matrix& delta;    ///< Δ
  const Matrix& d_delta;  ///< dΔ from B2
};

/// B3 to B5 for one chunk.
ChunkGrads chunk_gradients(const ChunkInputs& in, const ChunkFactors& f, const ChunkState& st,
                           const Matrix& d_o, double scale, bool delta_rule);

}  // namespace kcv::glr::detail
