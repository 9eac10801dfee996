// File: glr/reference/chunk_forward.hpp
// Forward stages of one chunk of one (sequence, value head), gdn-spec.md §4–§5, §7, §9, written
// once for all members. ChunkInputs holds the chunk's valid rows only (c ≤ C rows).
//   F1  G = chunk-local cumsum of g                           (ChunkGate)
//   F2  A^qk = P(Q, K, incl.);  L = diag(β)·P(K, K, strict);  T = (I + L)^{-1}  (delta rule)
//   F3  X = diag(β)(K ⊙ E),  Ṽ = diag(β) V,  W = T X,  U = T Ṽ                   (delta rule)
//   F4  Δ = U − W H  (delta rule) or Δ = V (no delta rule: T = I, W = 0);
//       H' = Diag(e_last) H + K̄ᵀ Δ,  K̄ = K ⊙ R
//   F5  O = scale · (Q̄ H + A^qk Δ),  Q̄ = Q ⊙ E
// Everything in ChunkFactors is independent of the entering state H, i.e. chunk-parallel; only
// chunk_delta and chunk_next_state sit on the serial path.
#pragma once

#include <vector>

#include "glr/oracle/matrix.hpp"
#include "glr/reference/chunk_gate.hpp"

namespace kcv::glr::detail {

struct ChunkInputs {
  Matrix q, k, v;            ///< c×K, c×K, c×V
  std::vector<double> beta;  ///< c values (delta rule only)
  ChunkGate gate;            ///< F1 done at construction
};

struct ChunkFactors {
  Matrix q_bar;                ///< Q ⊙ E
  Matrix k_bar;                ///< K ⊙ R
  std::vector<double> e_last;  ///< exp(G_last) per key channel
  Matrix a_qk;                 ///< P(Q, K, inclusive), unscaled
  Matrix gram_kk;              ///< P(K, K, strict); L = diag(β) gram_kk    (delta rule)
  Matrix t;                    ///< (I + L)^{-1}                              (delta rule)
  Matrix x;                    ///< diag(β)(K ⊙ E)                            (delta rule)
  Matrix v_tilde;              ///< diag(β) V                                 (delta rule)
  Matrix w, u;                 ///< T X, T Ṽ                                  (delta rule)
};

/// Stages F2 and F3 (and the decay-scaled Q̄, K̄ used by F4, F5).
ChunkFactors prepare_chunk(const ChunkInputs& in, bool delta_rule);

/// Δ ("v_new") for entering state h.
Matrix chunk_delta(const ChunkInputs& in, const ChunkFactors& f, const Matrix& h, bool delta_rule);

/// F4's state update: the state leaving the chunk.
Matrix chunk_next_state(const ChunkFactors& f, const Matrix& h, const Matrix& delta);

/// F5: the chunk's outputs, c×V.
Matrix chunk_output(const ChunkFactors& f, const Matrix& h, const Matrix& delta, double scale);

}  // namespace kcv::glr::detail
