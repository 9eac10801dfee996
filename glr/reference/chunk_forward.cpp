// File: glr/reference/chunk_forward.cpp
// The per-chunk forward stages of chunk_forward.hpp.
#include "glr/reference/chunk_forward.hpp"

#include "glr/reference/decayed_gram.hpp"
#include "glr/reference/tril_inverse.hpp"

namespace kcv::glr::detail {

ChunkFactors prepare_chunk(const ChunkInputs& in, bool delta_rule) {
  const ChunkGate& g = in.gate;
  const std::int64_t c = in.k.rows();
  const std::int64_t kd = in.k.cols();
  ChunkFactors f;
  f.q_bar = Matrix(c, kd);
  f.k_bar = Matrix(c, kd);
  for (std::int64_t i = 0; i < c; ++i)
    for (std::int64_t d = 0; d < kd; ++d) {
      f.q_bar(i, d) = in.q(i, d) * g.from_start(i, d);
      f.k_bar(i, d) = in.k(i, d) * g.to_end(i, d);
    }
  f.e_last.resize(static_cast<std::size_t>(kd));
  for (std::int64_t d = 0; d < kd; ++d) f.e_last[d] = g.at_end(d);
  f.a_qk = decayed_gram(in.q, in.k, g, Triangle::kInclusive);
  if (!delta_rule) return f;
  f.gram_kk = decayed_gram(in.k, in.k, g, Triangle::kStrict);
  f.t = unit_lower_inverse(scale_rows(f.gram_kk, in.beta));
  f.x = Matrix(c, kd);
  for (std::int64_t i = 0; i < c; ++i)
    for (std::int64_t d = 0; d < kd; ++d)
      f.x(i, d) = in.beta[i] * (in.k(i, d) * g.from_start(i, d));
  f.v_tilde = scale_rows(in.v, in.beta);
  f.w = matmul(f.t, f.x);
  f.u = matmul(f.t, f.v_tilde);
  return f;
}

Matrix chunk_delta(const ChunkInputs& in, const ChunkFactors& f, const Matrix& h, bool delta_rule) {
  if (!delta_rule) return in.v;
  Matrix delta = f.u;
  axpy(-1.0, matmul(f.w, h), delta);
  return delta;
}

Matrix chunk_next_state(const ChunkFactors& f, const Matrix& h, const Matrix& delta) {
  Matrix next = scale_rows(h, f.e_last);
  axpy(1.0, matmul_tn(f.k_bar, delta), next);
  return next;
}

Matrix chunk_output(const ChunkFactors& f, const Matrix& h, const Matrix& delta, double scale) {
  Matrix o = matmul(f.q_bar, h);
  axpy(1.0, matmul(f.a_qk, delta), o);
  for (std::int64_t i = 0; i < o.rows(); ++i)
    for (std::int64_t e = 0; e < o.cols(); ++e) o(i, e) *= scale;
  return o;
}

}  // namespace kcv::glr::detail
