// File: glr/tests/support/emulation_stages.hpp
// The stages the fp32 precision emulations share (precision_emulation.hpp): a small float matrix,
// rounding an operand as a product reads it, one product with fp32 accumulation in index order,
// a chunk's inputs in fp32, the decayed Gram with the reference's pairing, and the forward's
// per-chunk factors and state step.
#pragma once

#include <cstdint>
#include <vector>

#include "kcv/glr/chunked.hpp"
#include "kcv/glr/precision.hpp"
#include "kcv/glr/problem.hpp"

namespace kcv::glr::testing::emulation {

struct FMatrix {
  std::int64_t rows = 0, cols = 0;
  std::vector<float> a;
  FMatrix(std::int64_t r, std::int64_t c) : rows(r), cols(c), a(static_cast<std::size_t>(r * c)) {}
  float& operator()(std::int64_t i, std::int64_t j) {
    return a[static_cast<std::size_t>(i * cols + j)];
  }
  float operator()(std::int64_t i, std::int64_t j) const {
    return a[static_cast<std::size_t>(i * cols + j)];
  }
};

/// The state of (sequence n, value head hv) in `states` (p.layout), in fp32; zero when empty.
FMatrix load_state(const std::vector<double>& states, const Problem& p, std::int64_t n,
                   std::int64_t hv);

/// A rounded copy: the operand as the product reads it.
FMatrix rounded(FMatrix m, Rounding r);

/// C = A·B (transpose_a: Aᵀ·B), operands rounded first, fp32 accumulation in index order.
FMatrix product(const FMatrix& a, Rounding ra, const FMatrix& b, Rounding rb,
                bool transpose_a = false);

struct Chunk {
  FMatrix q, k, v, g;  // g: rows × gate width, the chunk-local cumsum G
  std::vector<float> beta;
  GateKind gate;
  float log_cum(std::int64_t i, std::int64_t d) const {
    return gate == GateKind::kNone ? 0.0f : g(i, g.cols == 1 ? 0 : d);
  }
  float decay(float exponent) const { return gate == GateKind::kNone ? 1.0f : std::exp(exponent); }
};

/// Rows [begin, end) of value head hv, with F1's chunk-local cumsum of g in fp32.
Chunk gather(Member m, const Problem& p, std::int64_t hv, std::int64_t begin, std::int64_t end);

/// F2's decayed Gram P(A, B) on the triangle, operands rounded (decayed_gram.hpp's pairing).
FMatrix gram(const Chunk& ch, const FMatrix& a, const FMatrix& b, bool strict, OperandRounding r);

struct Factors {
  FMatrix q_bar, k_bar, a_qk, w, u;
  std::vector<float> e_last;
  // the delta rule's (0 × 0 without it): P(K, K) (strict, unscaled by β), T, X, Ṽ
  FMatrix gram_kk{0, 0}, t{0, 0}, x{0, 0}, v_tilde{0, 0};
};

/// F2, F3 and the decayed Q̄, K̄ under the contract's forward roundings.
Factors prepare(const Chunk& ch, bool delta_rule, const PrecisionContract& pc);

/// F4 and F5 of one chunk: writes o's rows, returns the state leaving the chunk.
FMatrix step(const Factors& f, const FMatrix& h, bool delta_rule, const PrecisionContract& pc,
             float scale, FMatrix& o);

}  // namespace kcv::glr::testing::emulation
