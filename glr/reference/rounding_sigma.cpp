// File: glr/reference/rounding_sigma.cpp
// declared_rounding_sigma (include/kcv/glr/error_model.hpp): the serial forward pass of the
// chunked reference, carrying next to every state its elementwise error variance under the
// contract's declared roundings (rounding_variance.hpp), and σ = sqrt(variance) of o and of the
// final state.
#include <cmath>

#include "glr/oracle/validate.hpp"
#include "glr/reference/chunk_gate.hpp"
#include "glr/reference/chunk_io.hpp"
#include "glr/reference/rounding_variance.hpp"
#include "kcv/glr/error_model.hpp"

namespace kcv::glr {
namespace {

detail::Matrix root(detail::Matrix m) {
  for (std::int64_t i = 0; i < m.rows(); ++i)
    for (std::int64_t j = 0; j < m.cols(); ++j) m(i, j) = std::sqrt(m(i, j));
  return m;
}

}  // namespace

Expected<ForwardSigma> declared_rounding_sigma(Member member, const Problem& p,
                                               const PrecisionContract& contract,
                                               ChunkOptions options) {
  if (Status st = validate(member, p); !st) return st.error();
  if (Status st = validate(options); !st) return st.error();
  const Shape& s = p.shape;
  const bool delta_rule = traits(member).delta_rule;
  ForwardSigma out{std::vector<double>(static_cast<std::size_t>(s.v_size()), 0.0),
                   std::vector<double>(static_cast<std::size_t>(s.state_size()), 0.0)};
  for (std::int64_t n = 0; n < s.sequences(); ++n) {
    for (std::int64_t hv = 0; hv < s.v_heads; ++hv) {
      detail::Matrix h = detail::load_state(p.h0, s, n, hv, p.layout);
      detail::Matrix h_var(s.key_dim, s.value_dim);
      for (detail::ChunkRange r : detail::chunks_of(s, n, options.chunk_size)) {
        const detail::ChunkInputs in = detail::gather_chunk(member, p, hv, r);
        const detail::GateTable factors(in.gate);
        const detail::ChunkFactors f = detail::prepare_chunk(in, delta_rule);
        const detail::Matrix delta = detail::chunk_delta(in, f, h, delta_rule);
        detail::Matrix next = detail::chunk_next_state(f, h, delta);
        detail::ChunkVariance v = detail::chunk_rounding_variance(in, f, h, h_var, delta, next,
                                                                  p.scale, delta_rule, contract);
        detail::scatter_rows(root(std::move(v.o)), s, hv, r, out.o);
        h = std::move(next);
        h_var = std::move(v.next_state);
      }
      detail::store_state(root(std::move(h_var)), s, n, hv, p.layout, out.final_state);
    }
  }
  return out;
}

}  // namespace kcv::glr
