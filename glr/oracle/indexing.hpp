// File: glr/oracle/indexing.hpp
// Flat offsets into the packed token-major tensors of problem.hpp, the GVA head map, and loading /
// storing one K×V state in either stored layout. All offsets are 64-bit (the kernels must be too:
// B·T·H·K can pass 2^31). Internal to kcv::glr; both references use it.
#pragma once

#include <cstdint>
#include <vector>

#include "glr/oracle/matrix.hpp"
#include "kcv/glr/problem.hpp"

namespace kcv::glr::detail {

class TensorIndex {
 public:
  explicit TensorIndex(const Shape& s) : s_(s) {}

  std::int64_t qk(std::int64_t t, std::int64_t h, std::int64_t d) const {
    return (t * s_.qk_heads + h) * s_.key_dim + d;
  }
  std::int64_t v(std::int64_t t, std::int64_t hv, std::int64_t e) const {
    return (t * s_.v_heads + hv) * s_.value_dim + e;
  }
  /// g (width 1 or K), erase (width K) and write (width V) share this form.
  std::int64_t per_head(std::int64_t t, std::int64_t hv, std::int64_t width, std::int64_t d) const {
    return (t * s_.v_heads + hv) * width + d;
  }
  std::int64_t beta(std::int64_t t, std::int64_t hv) const { return t * s_.v_heads + hv; }
  std::int64_t state(std::int64_t n, std::int64_t hv, std::int64_t d, std::int64_t e,
                     StateLayout layout) const {
    const std::int64_t base = (n * s_.v_heads + hv) * s_.key_dim * s_.value_dim;
    return layout == StateLayout::kKV ? base + d * s_.value_dim + e : base + e * s_.key_dim + d;
  }
  /// GVA: value head hv reads q/k head hv / (HV / H).
  std::int64_t qk_head(std::int64_t hv) const { return hv / (s_.v_heads / s_.qk_heads); }

 private:
  const Shape& s_;
};

/// State of (sequence n, value head hv) as a K×V matrix; zeros when `states` is empty.
inline Matrix load_state(const std::vector<double>& states, const Shape& s, std::int64_t n,
                         std::int64_t hv, StateLayout layout) {
  Matrix m(s.key_dim, s.value_dim);
  if (states.empty()) return m;
  const TensorIndex ix(s);
  for (std::int64_t d = 0; d < s.key_dim; ++d)
    for (std::int64_t e = 0; e < s.value_dim; ++e)
      m(d, e) = states[static_cast<std::size_t>(ix.state(n, hv, d, e, layout))];
  return m;
}

inline void store_state(const Matrix& m, const Shape& s, std::int64_t n, std::int64_t hv,
                        StateLayout layout, std::vector<double>& states) {
  const TensorIndex ix(s);
  for (std::int64_t d = 0; d < s.key_dim; ++d)
    for (std::int64_t e = 0; e < s.value_dim; ++e)
      states[static_cast<std::size_t>(ix.state(n, hv, d, e, layout))] = m(d, e);
}

}  // namespace kcv::glr::detail
