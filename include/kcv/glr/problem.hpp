// File: include/kcv/glr/problem.hpp
// The data of one GLR call in fp64: shapes, packed token-major tensors, the state layout, and the
// gradients that flow back. Tensors are flat std::vector<double> in fla's token-major order with
// batch 1 and sequences packed along T (gdn-spec.md §2, §10):
//   q, k [T, H, K]    v, o [T, HV, V]    g [T, HV] (scalar) or [T, HV, K] (per channel)
//   beta [T, HV]      states [N, HV, K, V] (StateLayout::kKV) or [N, HV, V, K] (kVK)
// A fixed-length batch [B, T, ...] is the same memory as T_total = B·T with
// cu_seqlens = {0, T, 2T, ..., B·T}, so there is one code path. Value head hv reads q/k head
// hv / (HV / H) (GVA); gradients of q and k are summed over that group.
#pragma once

#include <cstdint>
#include <vector>

#include "kcv/expected.hpp"
#include "kcv/glr/member.hpp"

namespace kcv::glr {

/// Where the key index sits in a stored state: [.., K, V] (fla default) or [.., V, K]
/// (fla's state_v_first=True). Internally states are always K×V.
enum class StateLayout { kKV, kVK };

struct Shape {
  std::int64_t tokens = 0;     ///< T_total, all sequences packed
  std::int64_t qk_heads = 1;   ///< H
  std::int64_t v_heads = 1;    ///< HV, a multiple of H
  std::int64_t key_dim = 0;    ///< K
  std::int64_t value_dim = 0;  ///< V
  /// N+1 strictly increasing offsets from 0 to tokens (empty sequences are not allowed,
  /// gdn-spec.md §10). Empty means one sequence {0, tokens}.
  std::vector<std::int64_t> cu_seqlens;

  std::int64_t sequences() const {
    return cu_seqlens.empty() ? 1 : static_cast<std::int64_t>(cu_seqlens.size()) - 1;
  }
  std::int64_t seq_begin(std::int64_t n) const { return cu_seqlens.empty() ? 0 : cu_seqlens[n]; }
  std::int64_t seq_end(std::int64_t n) const {
    return cu_seqlens.empty() ? tokens : cu_seqlens[n + 1];
  }
  std::int64_t qk_size() const { return tokens * qk_heads * key_dim; }
  std::int64_t v_size() const { return tokens * v_heads * value_dim; }
  std::int64_t state_size() const { return sequences() * v_heads * key_dim * value_dim; }
};

/// Inputs of one member call. g is empty for members without a gate, beta empty without the
/// delta rule; h0 empty means a zero initial state.
struct Problem {
  Shape shape;
  std::vector<double> q, k, v, g, beta, h0;
  double scale = 1.0;  ///< fla's default is K^-1/2; the caller sets it explicitly
  StateLayout layout = StateLayout::kKV;
};

struct Outputs {
  std::vector<double> o;            ///< [T, HV, V]
  std::vector<double> final_state;  ///< [N, HV, K, V] or [N, HV, V, K] per Problem::layout
};

/// Gradients arriving from the loss: dO for o and (optionally, empty = 0) dht for the final state,
/// in the same layout as the states.
struct Cotangents {
  std::vector<double> d_o;
  std::vector<double> d_final_state;
};

/// ∂L/∂input for every input of Problem; dg and dbeta are empty for members without them.
struct Gradients {
  std::vector<double> dq, dk, dv, dg, dbeta, dh0;
};

/// Checks sizes, GVA divisibility, cu_seqlens and finiteness of scale for `member`.
/// @post ok() ⇔ every tensor has the size Shape implies; the error names the first bad field.
[[nodiscard]] Status validate(Member member, const Problem& problem);

/// Checks that the cotangents fit the problem (d_final_state may be empty).
[[nodiscard]] Status validate(const Problem& problem, const Cotangents& cotangents);

}  // namespace kcv::glr
