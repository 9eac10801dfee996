// File: glr/verify/oracle.cpp
// GlrOracle: a probe's inputs, the fp64 reference of its case and the bound of every output
// element. tau is the one GLR error model (kcv/glr/error_model.hpp) with u_out the output's own
// dtype, N and G of the whole problem, S per (sequence, head) slice, dg's term scale, and, under
// the bf16 grade, the declared-rounding σ of o, the final state (declared_rounding_sigma) and the
// gradients (declared_backward_sigma, precision-contract.md §6). Nothing here reads a candidate's
// output.
//
// EXC-01 is judged against the token-serial oracle, whose NaN mask is the recurrence's own: the
// chunk form has intra-chunk products that reach a NaN at token t* from earlier rows of t*'s
// chunk. For three outputs every chunked algorithm forms from sums over the whole chunk (dk with
// the delta rule, dg, dbeta), the rows of t*'s chunk carry the fp64 chunked reference's value as
// the sanctioned alternative (OracleOutput::alternative): there the kernel may follow either.
//
// A decode op (o and the final state of a few tokens) is judged against the token-serial oracle
// for every gate, with N and G of the token-serial evaluation (decode_model_scale): the decode
// kernel runs the recurrence token by token itself, so it has no chunk form to be alternative to.
#include <fmt/format.h>

#include <cmath>

#include "glr/verify/internal.hpp"

namespace kcv::glr {

using verify_detail::Data;
using verify_detail::Reference;
using verify_detail::Results;

/// One case's references, shared by its probes (grades, gates, repetitions).
struct GlrOracle::Cached {
  std::mutex mutex;
  std::optional<Results> chunked;           // with dg's term scale
  std::optional<ForwardSigma> sigma;        // the bf16 grade's σ of o and the final state
  std::optional<BackwardSigma> grad_sigma;  // and of the gradients
  std::optional<Results> token_serial;      // EXC-01; a decode op's forward for every gate
};

namespace {

constexpr std::int64_t kChunk = 64;

/// The case and everything that changes the inputs' values; not the gate, grade or call plan.
std::string cache_key(const Probe& p) {
  Probe k = p;
  k.gate = GateId::kCmp01;
  k.label.clear();
  k.tags.erase("grade");
  k.repetitions = 1;
  k.shift_addresses = false;
  return probe_to_token(k);
}

// Elements of per-token output `name` [T, heads, width] in rows of the poisoned tokens' chunks
// (of the head the NaN reaches), for the alternative of EXC-01.
std::vector<bool> chunk_window(const Case& c, const Probe& p, std::string_view name,
                               std::int64_t heads, std::int64_t width) {
  const Shape s = c.shape();
  std::vector<bool> in(static_cast<std::size_t>(s.tokens * heads * width), false);
  const int v = input_index(c.member, "v");
  for (const Injection& inj : p.injections) {
    if (inj.input != v) continue;
    const std::int64_t t = inj.index / (s.v_heads * s.value_dim);
    const std::int64_t hv = inj.index / s.value_dim % s.v_heads;
    const std::int64_t head = name == "dk" ? hv / (s.v_heads / s.qk_heads) : hv;
    for (std::int64_t n = 0; n < s.sequences(); ++n) {
      if (t < s.seq_begin(n) || t >= s.seq_end(n)) continue;
      const std::int64_t begin = s.seq_begin(n) + (t - s.seq_begin(n)) / kChunk * kChunk;
      const std::int64_t end = std::min(begin + kChunk, s.seq_end(n));
      for (std::int64_t r = begin; r < end; ++r)
        for (std::int64_t x = 0; x < width; ++x) in[(r * heads + head) * width + x] = true;
    }
  }
  return in;
}

/// The data with every non-finite input value (an EXC-01 injection, a NaN in v) set to 0: what
/// the declared-rounding σ is computed from. EXC-01 judges the NaN/Inf mask only, but every
/// probe's outputs carry a tau; the backward's σ requires inputs exact in bf16, which NaN is
/// not, and an element the injection does not reach does not depend on the injected value.
verify_detail::Data finite_only(verify_detail::Data d) {
  for (std::vector<double>* v : {&d.problem.q, &d.problem.k, &d.problem.v, &d.problem.g,
                                 &d.problem.beta, &d.problem.h0, &d.cot.d_o, &d.cot.d_final_state})
    for (double& x : *v)
      if (!std::isfinite(x)) x = 0.0;
  return d;
}

bool all_finite(const verify_detail::Data& d) {
  for (const std::vector<double>* v :
       {&d.problem.q, &d.problem.k, &d.problem.v, &d.problem.g, &d.problem.beta, &d.problem.h0,
        &d.cot.d_o, &d.cot.d_final_state})
    for (double x : *v)
      if (!std::isfinite(x)) return false;
  return true;
}

bool windowed(const Case& c, std::string_view name) {
  return name == "dg" || name == "dbeta" || (name == "dk" && traits(c.member).delta_rule);
}

}  // namespace

namespace {

// A decode case: the token-serial forward, tau with the decode kernel's N and G.
Expected<OracleResult> evaluate_decode(const Case& c, const Data& d, GlrOracle::Cached& cached,
                                       int threads) {
  if (!cached.token_serial) {
    auto r =
        verify_detail::run_sliced(c.member, d, {.which = Reference::kTokenSerialForward}, threads);
    if (!r) return r.error();
    cached.token_serial = std::move(*r);
  }
  const ModelScale m = decode_model_scale(d.problem);
  const Shape s = c.shape();
  const std::int64_t gw = gate_width(traits(c.member).gate, s.key_dim);
  const std::vector<DType> dtypes = verify_detail::output_dtypes(c);
  const std::vector<kcv::Shape> shapes = verify_detail::output_shapes(c);
  const auto named = verify_detail::outputs_of(c.member, *cached.token_serial, OpKind::kDecode);
  OracleResult result;
  for (std::size_t o = 0; o < named.size(); ++o) {
    auto tau = glr::tau(named[o].which, *named[o].values, s, gw, m, kcv::unit_roundoff(dtypes[o]));
    if (!tau) return tau.error();
    OracleOutput out;
    out.dtype = dtypes[o];
    out.shape = shapes[o];
    out.value = *named[o].values;
    out.tau = std::move(*tau);
    result.outputs.push_back(std::move(out));
  }
  return result;
}

}  // namespace

GlrOracle::GlrOracle(const GlrOptions& options) : options_(options) {}
GlrOracle::~GlrOracle() = default;

Expected<ProbeInputs> GlrOracle::make_inputs(const Probe& probe) {
  auto c = case_of(probe);
  if (!c) return c.error();
  ProbeInputs in;
  if (options_.max_tokens > 0 && c->tokens() > options_.max_tokens) {
    in.refused = fmt::format("T = {} is over the probe budget of {} tokens (--max-tokens)",
                             c->tokens(), options_.max_tokens);
    return in;
  }
  in.tensors = verify_detail::make_tensors(*c, probe);
  const std::vector<DType> dtypes = verify_detail::output_dtypes(*c);
  const std::vector<kcv::Shape> shapes = verify_detail::output_shapes(*c);
  for (std::size_t o = 0; o < dtypes.size(); ++o) in.outputs.push_back({dtypes[o], shapes[o]});
  return in;
}

Expected<SharedOracleResult> GlrOracle::evaluate(const Probe& probe, const ProbeInputs& inputs,
                                                 const Contract& contract) {
  auto r = evaluate_owned(probe, inputs, contract);
  if (!r) return r.error();
  return share(std::move(*r));
}

Expected<OracleResult> GlrOracle::evaluate_owned(const Probe& probe, const ProbeInputs& inputs,
                                                 const Contract&) {
  auto c = case_of(probe);
  if (!c) return c.error();
  std::shared_ptr<Cached> cached;
  {
    const std::lock_guard lock(mutex_);
    auto& slot = cache_[cache_key(probe)];
    if (!slot) slot = std::make_shared<Cached>();
    cached = slot;
  }
  const std::lock_guard lock(cached->mutex);
  const Data d = verify_detail::data_of(*c, inputs.tensors);
  if (c->op == OpKind::kDecode) {
    auto decoded = evaluate_decode(*c, d, *cached, options_.threads);
    if (!decoded) return decoded.error();
    return std::move(*decoded);
  }
  // The chunked reference's values (and dg's terms) and, under the bf16 grade, σ: one pass over
  // the slices when the inputs are finite (σ is taken from them as they are), else σ apart from
  // the inputs with every non-finite value set to 0 (finite_only). Each only once per case.
  const bool gated = traits(c->member).gate != GateKind::kNone;
  const bool bf16 = c->grade == Grade::kBf16;
  const bool need_values = !cached->chunked;
  const bool need_sigma = bf16 && !cached->sigma;
  const bool finite = all_finite(d);
  if (need_values || (need_sigma && finite)) {
    auto r = verify_detail::run_sliced(c->member, d,
                                       {.which = Reference::kChunked,
                                        .values = need_values,
                                        .dg_scale = gated && need_values,
                                        .sigma = need_sigma && finite},
                                       options_.threads);
    if (!r) return r.error();
    if (need_sigma && finite) {
      cached->sigma = std::move(r->sigma);
      cached->grad_sigma = std::move(r->grad_sigma);
    }
    if (need_values) cached->chunked = std::move(*r);
  }
  if (need_sigma && !finite) {
    auto r = verify_detail::run_sliced(
        c->member, finite_only(d), {.which = Reference::kChunked, .values = false, .sigma = true},
        options_.threads);
    if (!r) return r.error();
    cached->sigma = std::move(r->sigma);
    cached->grad_sigma = std::move(r->grad_sigma);
  }
  const bool exc = probe.gate == GateId::kExc01;
  if (exc && !cached->token_serial) {
    auto r = verify_detail::run_sliced(c->member, d, {.which = Reference::kTokenSerial},
                                       options_.threads);
    if (!r) return r.error();
    cached->token_serial = std::move(*r);
  }
  const Results& values = exc ? *cached->token_serial : *cached->chunked;
  const ModelScale m = model_scale(d.problem);
  const Shape s = c->shape();
  const std::int64_t gw = gate_width(traits(c->member).gate, s.key_dim);
  const std::vector<DType> dtypes = verify_detail::output_dtypes(*c);
  const std::vector<kcv::Shape> shapes = verify_detail::output_shapes(*c);
  const auto named = verify_detail::outputs_of(c->member, values);
  const auto chunked = verify_detail::outputs_of(c->member, *cached->chunked);
  OracleResult result;
  for (std::size_t o = 0; o < named.size(); ++o) {
    const auto& [name, which, ref] = named[o];
    std::span<const double> sigma;
    if (bf16 && which == Output::kO) sigma = cached->sigma->o;
    if (bf16 && which == Output::kFinalState) sigma = cached->sigma->final_state;
    if (bf16) {
      const BackwardSigma& gs = *cached->grad_sigma;
      if (which == Output::kDq) sigma = gs.dq;
      if (which == Output::kDk) sigma = gs.dk;
      if (which == Output::kDv) sigma = gs.dv;
      if (which == Output::kDg) sigma = gs.dg;
      if (which == Output::kDbeta) sigma = gs.dbeta;
      if (which == Output::kDh0) sigma = gs.dh0;
    }
    std::span<const double> terms;
    if (which == Output::kDg) terms = cached->chunked->dg_scale;
    auto tau = glr::tau(which, *ref, s, gw, m, kcv::unit_roundoff(dtypes[o]), terms, sigma);
    if (!tau) return tau.error();
    OracleOutput out;
    out.dtype = dtypes[o];
    out.shape = shapes[o];
    out.value = *ref;
    out.tau = std::move(*tau);
    if (exc && windowed(*c, name)) {
      const OutputSlices sl = output_slices(which, s, gw);
      const std::vector<bool> window = chunk_window(*c, probe, name, sl.heads, sl.width);
      out.alternative = out.value;
      for (std::size_t i = 0; i < window.size(); ++i)
        if (window[i]) out.alternative[i] = (*chunked[o].values)[i];
    }
    result.outputs.push_back(std::move(out));
  }
  return result;
}

}  // namespace kcv::glr
