// File: glr/oracle/token_forward.cpp
// Forward of the general recurrence: for every sequence and value head, start from h0 (or zero)
// and apply token_step.hpp once per token, writing o_t as it goes and the final state at the end.
#include "glr/oracle/indexing.hpp"
#include "glr/oracle/token_step.hpp"
#include "glr/oracle/validate.hpp"
#include "kcv/glr/oracle.hpp"

namespace kcv::glr {

Expected<Outputs> run_recurrence(const Recurrence& r) {
  if (Status st = detail::validate_recurrence(r); !st) return st.error();
  const Shape& s = r.shape;
  const detail::TensorIndex ix(s);
  Outputs out;
  out.o.assign(static_cast<std::size_t>(s.v_size()), 0.0);
  out.final_state.assign(static_cast<std::size_t>(s.state_size()), 0.0);
  detail::StepRecord rec;
  for (std::int64_t n = 0; n < s.sequences(); ++n) {
    for (std::int64_t hv = 0; hv < s.v_heads; ++hv) {
      detail::Matrix state = detail::load_state(r.h0, s, n, hv, r.layout);
      detail::Matrix next;
      for (std::int64_t t = s.seq_begin(n); t < s.seq_end(n); ++t) {
        const detail::TokenView x = detail::token_view(r, ix, t, hv);
        detail::step(r.gate, state, x, next, rec);
        std::swap(state, next);
        detail::output(state, x.q, r.scale, out.o.data() + ix.v(t, hv, 0));
      }
      detail::store_state(state, s, n, hv, r.layout, out.final_state);
    }
  }
  return out;
}

}  // namespace kcv::glr
