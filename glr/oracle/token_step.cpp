// File: glr/oracle/token_step.cpp
// The literal per-token arithmetic of the oracle. No blocking, no reassociation beyond the
// obvious dot products, so the result is the recurrence of gdn-spec.md §1 as written.
#include "glr/oracle/token_step.hpp"

#include <cmath>

namespace kcv::glr::detail {

TokenView token_view(const Recurrence& r, const TensorIndex& ix, std::int64_t t, std::int64_t hv) {
  const Shape& s = r.shape;
  const std::int64_t h = ix.qk_head(hv);
  const std::int64_t gw = gate_width(r.gate, s.key_dim);
  TokenView x;
  x.q = r.q.data() + ix.qk(t, h, 0);
  x.k = r.k.data() + ix.qk(t, h, 0);
  x.v = r.v.data() + ix.v(t, hv, 0);
  x.g = gw == 0 ? nullptr : r.g.data() + ix.per_head(t, hv, gw, 0);
  x.erase = r.erase.data() + ix.per_head(t, hv, s.key_dim, 0);
  x.write = r.write.data() + ix.per_head(t, hv, s.value_dim, 0);
  return x;
}

void step(GateKind gate, const Matrix& prev, const TokenView& x, Matrix& next, StepRecord& rec) {
  const std::int64_t kd = prev.rows();
  const std::int64_t vd = prev.cols();
  rec.decay.assign(static_cast<std::size_t>(kd), 1.0);
  for (std::int64_t d = 0; d < kd; ++d) {
    if (gate == GateKind::kScalar) rec.decay[d] = std::exp(x.g[0]);
    if (gate == GateKind::kChannel) rec.decay[d] = std::exp(x.g[d]);
  }
  rec.decayed = Matrix(kd, vd);
  for (std::int64_t d = 0; d < kd; ++d)
    for (std::int64_t e = 0; e < vd; ++e) rec.decayed(d, e) = rec.decay[d] * prev(d, e);
  rec.erase_key.assign(static_cast<std::size_t>(kd), 0.0);
  for (std::int64_t d = 0; d < kd; ++d) rec.erase_key[d] = x.erase[d] * x.k[d];
  rec.delta.assign(static_cast<std::size_t>(vd), 0.0);
  for (std::int64_t e = 0; e < vd; ++e) {
    double erased = 0.0;
    // A zero erase strength leaves the term out (not 0·S'): a NaN in S' must not reach δ
    // through a product the recurrence does not have (EXC-01 takes this oracle's NaN mask).
    for (std::int64_t d = 0; d < kd; ++d)
      if (x.erase[d] != 0.0) erased += rec.decayed(d, e) * rec.erase_key[d];
    rec.delta[e] = x.write[e] * x.v[e] - erased;
  }
  next = Matrix(kd, vd);
  for (std::int64_t d = 0; d < kd; ++d)
    for (std::int64_t e = 0; e < vd; ++e) next(d, e) = rec.decayed(d, e) + x.k[d] * rec.delta[e];
}

void output(const Matrix& s, const double* q, double scale, double* o) {
  for (std::int64_t e = 0; e < s.cols(); ++e) {
    double acc = 0.0;
    for (std::int64_t d = 0; d < s.rows(); ++d) acc += s(d, e) * q[d];
    o[e] = scale * acc;
  }
}

}  // namespace kcv::glr::detail
