// File: glr/oracle/adjoint.cpp
// Analytic reverse-time backward of the general recurrence. For one sequence and value head the
// forward is re-run keeping every kCheckpointStride-th state; the reverse sweep then recomputes
// one segment of states at a time from its checkpoint (memory ~(T/64 + 64)·K·V doubles instead of
// T·K·V: at T = 8192, K = V = 128 that is 1.07 GB → 25 MB per head; the recomputation runs the
// same steps as the forward, so the result is bitwise what storing every state would give). For
// t = last..first, with dS = ∂L/∂S_t:
//   dS += scale q dO^T;       dq += scale S_t dO
//   dδ = dS^T k;              dk += dS δ;   dw = v ⊙ dδ;   dv = w ⊙ dδ
//   y = S' dδ;                db = −k ⊙ y;  dk += −b ⊙ y
//   dS' = dS − c dδ^T;        dg_d = Σ_e S'_{de} dS'_{de} (summed over d for a scalar gate)
//   dS ← Diag(a) dS'          (∂L/∂S_{t−1}); after the first token it is dh0.
#include "glr/oracle/adjoint.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "glr/oracle/indexing.hpp"
#include "glr/oracle/token_step.hpp"
#include "glr/oracle/validate.hpp"

namespace kcv::glr::detail {
namespace {

struct HeadTask {
  const Recurrence& r;
  const Cotangents& cot;
  const TensorIndex& ix;
  std::int64_t n;
  std::int64_t hv;
  bool with_rounding_bound;
};

constexpr std::int64_t kCheckpointStride = 64;

// States S_{b−1}, S_b, …, S_{e−1} (the state before token b first), from `entry` = S_{b−1}.
std::vector<Matrix> forward_states(const HeadTask& task, Matrix entry, std::int64_t b,
                                   std::int64_t e) {
  std::vector<Matrix> states;
  states.push_back(std::move(entry));
  StepRecord rec;
  for (std::int64_t t = b; t < e; ++t) {
    Matrix next;
    step(task.r.gate, states.back(), token_view(task.r, task.ix, t, task.hv), next, rec);
    states.push_back(std::move(next));
  }
  return states;
}

// Rounding bound of the step that formed S_t and of o_t (see adjoint.hpp).
double step_rounding(const Matrix& ds, const Matrix& st, const StepRecord& rec, const TokenView& x,
                     const double* d_o, double scale) {
  const std::int64_t kd = st.rows();
  const std::int64_t vd = st.cols();
  double bound = 0.0;
  for (std::int64_t e = 0; e < vd; ++e) {
    double erased_abs = 0.0;
    double out_abs = 0.0;
    for (std::int64_t d = 0; d < kd; ++d) {
      erased_abs += std::abs(rec.decayed(d, e) * rec.erase_key[d]);
      out_abs += std::abs(st(d, e) * x.q[d]);
    }
    const double written_abs = std::abs(x.write[e] * x.v[e]);
    for (std::int64_t d = 0; d < kd; ++d) {
      const double local =
          std::abs(rec.decayed(d, e)) + std::abs(x.k[d]) * (written_abs + erased_abs);
      bound += std::abs(ds(d, e)) * gamma(static_cast<double>(kd + 4)) * local;
    }
    bound += std::abs(d_o[e]) * gamma(static_cast<double>(kd + 1)) * std::abs(scale) * out_abs;
  }
  return bound;
}

// One reverse step: `ds` holds ∂L/∂S_t on entry (before the o_t term) and ∂L/∂S_{t−1} on exit.
void token_adjoint(const HeadTask& task, std::int64_t t, const Matrix& prev, const Matrix& st,
                   Matrix& ds, Adjoint& out) {
  const Recurrence& r = task.r;
  const std::int64_t kd = st.rows();
  const std::int64_t vd = st.cols();
  const std::int64_t gw = gate_width(r.gate, kd);
  const std::int64_t h = task.ix.qk_head(task.hv);
  RecurrenceGradients& gr = out.grads;
  const TokenView x = token_view(r, task.ix, t, task.hv);
  StepRecord rec;
  Matrix unused;
  step(r.gate, prev, x, unused, rec);
  const double* d_o = task.cot.d_o.data() + task.ix.v(t, task.hv, 0);
  for (std::int64_t d = 0; d < kd; ++d) {
    double acc = 0.0;
    for (std::int64_t e = 0; e < vd; ++e) {
      ds(d, e) += r.scale * x.q[d] * d_o[e];
      acc += st(d, e) * d_o[e];
    }
    gr.dq[task.ix.qk(t, h, d)] += r.scale * acc;
  }
  if (task.with_rounding_bound)
    out.loss_rounding_bound += step_rounding(ds, st, rec, x, d_o, r.scale);
  std::vector<double> d_delta(static_cast<std::size_t>(vd));
  for (std::int64_t e = 0; e < vd; ++e) {
    for (std::int64_t d = 0; d < kd; ++d) d_delta[e] += ds(d, e) * x.k[d];
    gr.d_write[task.ix.per_head(t, task.hv, vd, e)] = x.v[e] * d_delta[e];
    gr.dv[task.ix.v(t, task.hv, e)] = x.write[e] * d_delta[e];
  }
  for (std::int64_t d = 0; d < kd; ++d) {
    double via_state = 0.0, y = 0.0, dg = 0.0;
    for (std::int64_t e = 0; e < vd; ++e) {
      via_state += ds(d, e) * rec.delta[e];
      y += rec.decayed(d, e) * d_delta[e];
    }
    // A zero erase strength (every token of a member without the delta rule) leaves the erase
    // term out rather than multiplying it by 0: a NaN in S' must not reach dk through 0·NaN,
    // which the recurrence itself never forms (EXC-01 takes this oracle's NaN mask).
    gr.dk[task.ix.qk(t, h, d)] += x.erase[d] == 0.0 ? via_state : via_state - x.erase[d] * y;
    gr.d_erase[task.ix.per_head(t, task.hv, kd, d)] = -x.k[d] * y;
    for (std::int64_t e = 0; e < vd; ++e) {
      const double ds_prime = ds(d, e) - rec.erase_key[d] * d_delta[e];
      dg += rec.decayed(d, e) * ds_prime;
      ds(d, e) = rec.decay[d] * ds_prime;
    }
    if (gw > 0) gr.dg[task.ix.per_head(t, task.hv, gw, gw == 1 ? 0 : d)] += dg;
  }
}

void head_adjoint(const HeadTask& task, Adjoint& out) {
  const Shape& s = task.r.shape;
  const std::int64_t bos = s.seq_begin(task.n), eos = s.seq_end(task.n);
  std::vector<Matrix> checkpoints{load_state(task.r.h0, s, task.n, task.hv, task.r.layout)};
  for (std::int64_t b = bos; b + kCheckpointStride < eos; b += kCheckpointStride)
    checkpoints.push_back(
        forward_states(task, checkpoints.back(), b, b + kCheckpointStride).back());
  Matrix ds = load_state(task.cot.d_final_state, s, task.n, task.hv, task.r.layout);
  for (auto j = static_cast<std::int64_t>(checkpoints.size()) - 1; j >= 0; --j) {
    const std::int64_t b = bos + j * kCheckpointStride;
    const std::int64_t e = std::min(b + kCheckpointStride, eos);
    const std::vector<Matrix> states = forward_states(task, checkpoints[j], b, e);
    for (std::int64_t t = e - 1; t >= b; --t) {
      const auto i = static_cast<std::size_t>(t - b);
      token_adjoint(task, t, states[i], states[i + 1], ds, out);
    }
  }
  store_state(ds, s, task.n, task.hv, task.r.layout, out.grads.dh0);
}

}  // namespace

double gamma(double n) {
  const double u = std::numeric_limits<double>::epsilon() / 2.0;
  return n * u / (1.0 - n * u);
}

Expected<Adjoint> recurrence_adjoint(const Recurrence& r, const Cotangents& cot,
                                     bool with_rounding_bound) {
  if (Status st = validate_recurrence(r); !st) return st.error();
  const Shape& s = r.shape;
  if (Status st = validate_size("d_o", cot.d_o.size(), s.v_size()); !st) return st.error();
  if (!cot.d_final_state.empty())
    if (Status st = validate_size("d_final_state", cot.d_final_state.size(), s.state_size()); !st)
      return st.error();
  Adjoint out;
  RecurrenceGradients& g = out.grads;
  g.dq.assign(r.q.size(), 0.0);
  g.dk.assign(r.k.size(), 0.0);
  g.dv.assign(r.v.size(), 0.0);
  g.dg.assign(r.g.size(), 0.0);
  g.d_erase.assign(r.erase.size(), 0.0);
  g.d_write.assign(r.write.size(), 0.0);
  g.dh0.assign(static_cast<std::size_t>(s.state_size()), 0.0);
  const TensorIndex ix(s);
  for (std::int64_t n = 0; n < s.sequences(); ++n)
    for (std::int64_t hv = 0; hv < s.v_heads; ++hv)
      head_adjoint(HeadTask{r, cot, ix, n, hv, with_rounding_bound}, out);
  return out;
}

}  // namespace kcv::glr::detail

namespace kcv::glr {

Expected<RecurrenceGradients> recurrence_backward(const Recurrence& r, const Cotangents& cot) {
  Expected<detail::Adjoint> a = detail::recurrence_adjoint(r, cot, false);
  if (!a) return a.error();
  return std::move(a.value().grads);
}

}  // namespace kcv::glr
