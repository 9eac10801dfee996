// File: glr/oracle/member_map.cpp
// How each member is an instance of the general recurrence (gdn-spec.md §1 table): the gate kind
// comes from traits(member); with the delta rule the erase and write strengths are b_t = β_t·1
// and w_t = β_t·1, without it b_t = 0 and w_t = 1 (and β is not an input). The member backward
// folds the two strength gradients into dβ_t = Σ_d ∂L/∂b_{t,d} + Σ_e ∂L/∂w_{t,e}.
#include "glr/oracle/adjoint.hpp"
#include "glr/oracle/indexing.hpp"
#include "kcv/glr/oracle.hpp"

namespace kcv::glr {

Expected<Recurrence> as_recurrence(Member member, const Problem& p) {
  if (Status st = validate(member, p); !st) return st.error();
  const MemberTraits tr = traits(member);
  const Shape& s = p.shape;
  Recurrence r{p.shape, tr.gate, p.q, p.k, p.v, p.g, {}, {}, p.h0, p.scale, p.layout};
  r.erase.assign(static_cast<std::size_t>(s.tokens * s.v_heads * s.key_dim), 0.0);
  r.write.assign(static_cast<std::size_t>(s.tokens * s.v_heads * s.value_dim), 1.0);
  if (!tr.delta_rule) return r;
  const detail::TensorIndex ix(s);
  for (std::int64_t t = 0; t < s.tokens; ++t) {
    for (std::int64_t hv = 0; hv < s.v_heads; ++hv) {
      const double beta = p.beta[ix.beta(t, hv)];
      for (std::int64_t d = 0; d < s.key_dim; ++d) r.erase[ix.per_head(t, hv, s.key_dim, d)] = beta;
      for (std::int64_t e = 0; e < s.value_dim; ++e)
        r.write[ix.per_head(t, hv, s.value_dim, e)] = beta;
    }
  }
  return r;
}

Expected<Outputs> oracle_forward(Member member, const Problem& p) {
  Expected<Recurrence> r = as_recurrence(member, p);
  if (!r) return r.error();
  return run_recurrence(*r);
}

Expected<Gradients> oracle_backward(Member member, const Problem& p, const Cotangents& cot) {
  Expected<Recurrence> r = as_recurrence(member, p);
  if (!r) return r.error();
  if (Status st = validate(p, cot); !st) return st.error();
  Expected<RecurrenceGradients> rg = recurrence_backward(*r, cot);
  if (!rg) return rg.error();
  Gradients g{std::move(rg->dq), std::move(rg->dk), std::move(rg->dv), std::move(rg->dg), {},
              std::move(rg->dh0)};
  if (!traits(member).delta_rule) return g;
  const Shape& s = p.shape;
  const detail::TensorIndex ix(s);
  g.dbeta.assign(p.beta.size(), 0.0);
  for (std::int64_t t = 0; t < s.tokens; ++t) {
    for (std::int64_t hv = 0; hv < s.v_heads; ++hv) {
      double acc = 0.0;
      for (std::int64_t d = 0; d < s.key_dim; ++d)
        acc += rg->d_erase[ix.per_head(t, hv, s.key_dim, d)];
      for (std::int64_t e = 0; e < s.value_dim; ++e)
        acc += rg->d_write[ix.per_head(t, hv, s.value_dim, e)];
      g.dbeta[ix.beta(t, hv)] = acc;
    }
  }
  return g;
}

}  // namespace kcv::glr
