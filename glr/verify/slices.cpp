// File: glr/verify/slices.cpp
// The fp64 references on a whole GLR problem, sliced into independent (sequence, value head)
// problems that run on a pool of std::threads: each slice has one sequence, one q/k head (the
// value head's GVA head) and one value head. dg's terms and the declared-rounding σ of the
// outputs and of the gradients are per slice as well (kcv/glr/error_model.hpp computes them per
// sequence and value head), so they run in the same pass. A slice's parts are independent tasks
// (SliceTask): a case of one long sequence and two value heads (T = 32768 in the GPU case list)
// has two slices but eight tasks. Results are scattered back serially in value-head order; dq and
// dk add up over a group's value heads there, as the kernels sum them.
#include <atomic>
#include <cmath>
#include <thread>

#include "glr/verify/internal.hpp"
#include "kcv/glr/chunked.hpp"
#include "kcv/glr/oracle.hpp"

namespace kcv::glr::verify_detail {
namespace {

struct Slice {
  std::int64_t seq = 0;
  std::int64_t hv = 0;
  Data data;
  Expected<Outputs> fwd = Outputs{};
  Expected<Gradients> grads = Gradients{};
  Expected<DgTerms> terms = DgTerms{};
  Expected<ForwardSigma> sigma = ForwardSigma{};
  Expected<BackwardSigma> grad_sigma = BackwardSigma{};
};

// Copies `width` values per token of head `head` (of `heads`) for tokens [b, e).
std::vector<double> rows(const std::vector<double>& src, std::int64_t b, std::int64_t e,
                         std::int64_t heads, std::int64_t head, std::int64_t width) {
  std::vector<double> out;
  if (src.empty() || width == 0) return out;
  out.reserve(static_cast<std::size_t>((e - b) * width));
  for (std::int64_t t = b; t < e; ++t)
    for (std::int64_t x = 0; x < width; ++x) out.push_back(src[(t * heads + head) * width + x]);
  return out;
}

std::vector<double> state_block(const std::vector<double>& src, const Shape& s, std::int64_t n,
                                std::int64_t hv) {
  if (src.empty()) return {};
  const std::int64_t kv = s.key_dim * s.value_dim;
  const auto first = src.begin() + (n * s.v_heads + hv) * kv;
  return std::vector<double>(first, first + kv);
}

Slice make_slice(Member member, const Data& d, std::int64_t n, std::int64_t hv) {
  const Problem& p = d.problem;
  const Shape& s = p.shape;
  const std::int64_t b = s.seq_begin(n);
  const std::int64_t e = s.seq_end(n);
  const std::int64_t h = hv / (s.v_heads / s.qk_heads);
  const std::int64_t gw = gate_width(traits(member).gate, s.key_dim);
  Slice sl;
  sl.seq = n;
  sl.hv = hv;
  Problem& q = sl.data.problem;
  q.shape.tokens = e - b;
  q.shape.key_dim = s.key_dim;
  q.shape.value_dim = s.value_dim;
  q.q = rows(p.q, b, e, s.qk_heads, h, s.key_dim);
  q.k = rows(p.k, b, e, s.qk_heads, h, s.key_dim);
  q.v = rows(p.v, b, e, s.v_heads, hv, s.value_dim);
  q.g = rows(p.g, b, e, s.v_heads, hv, gw);
  q.beta = rows(p.beta, b, e, s.v_heads, hv, 1);
  q.h0 = state_block(p.h0, s, n, hv);
  q.scale = p.scale;
  q.layout = p.layout;
  sl.data.cot.d_o = rows(d.cot.d_o, b, e, s.v_heads, hv, s.value_dim);
  sl.data.cot.d_final_state = state_block(d.cot.d_final_state, s, n, hv);
  return sl;
}

std::vector<double> squared(std::vector<double> v) {
  for (double& x : v) x *= x;
  return v;
}

// Writes (or adds) a slice's per-token rows back into the full tensor.
void scatter(const std::vector<double>& src, std::vector<double>& dst, std::int64_t b,
             std::int64_t e, std::int64_t heads, std::int64_t head, std::int64_t width, bool add) {
  if (src.empty() || width == 0) return;
  std::size_t i = 0;
  for (std::int64_t t = b; t < e; ++t)
    for (std::int64_t x = 0; x < width; ++x) {
      double& d = dst[(t * heads + head) * width + x];
      d = add ? d + src[i] : src[i];
      ++i;
    }
}

void scatter_state(const std::vector<double>& src, std::vector<double>& dst, const Shape& s,
                   std::int64_t n, std::int64_t hv) {
  const std::int64_t kv = s.key_dim * s.value_dim;
  for (std::int64_t i = 0; i < kv && i < std::ssize(src); ++i)
    dst[(n * s.v_heads + hv) * kv + i] = src[i];
}

/// A slice's independent parts, in the order the pool takes them: the longest kind first (the
/// backward's σ is about half of a delta-rule slice's work, the forward alone a tenth).
enum class SliceTask { kBackwardSigma, kBackward, kForwardSigma, kForward };
constexpr SliceTask kSliceTasks[] = {SliceTask::kBackwardSigma, SliceTask::kBackward,
                                     SliceTask::kForwardSigma, SliceTask::kForward};

bool asked(SliceTask t, const SliceRequest& r) {
  switch (t) {
    case SliceTask::kForward:
      return r.values;
    case SliceTask::kBackward:
      return r.values && r.which != Reference::kTokenSerialForward;
    case SliceTask::kForwardSigma:
    case SliceTask::kBackwardSigma:
      return r.sigma && r.which == Reference::kChunked;
  }
  return false;
}

/// One part of a slice into its own field of `sl` (no two tasks write the same field).
void run_task(Member member, Slice& sl, SliceTask task, const SliceRequest& r) {
  const Data& d = sl.data;
  const bool chunked = r.which == Reference::kChunked;
  switch (task) {
    case SliceTask::kForward:
      sl.fwd = chunked ? chunked_forward(member, d.problem) : oracle_forward(member, d.problem);
      return;
    case SliceTask::kBackward:
      sl.grads = chunked ? chunked_backward(member, d.problem, d.cot)
                         : oracle_backward(member, d.problem, d.cot);
      if (chunked && r.dg_scale && sl.grads)
        sl.terms = dg_terms(member, d.problem, d.cot, *sl.grads);
      return;
    case SliceTask::kForwardSigma:
      sl.sigma = declared_rounding_sigma(member, d.problem, contract_for(Grade::kBf16));
      return;
    case SliceTask::kBackwardSigma:
      sl.grad_sigma = declared_backward_sigma(member, d.problem, d.cot, contract_for(Grade::kBf16));
      return;
  }
}

Results zero_results(Member member, const Shape& s, const SliceRequest& req) {
  const std::int64_t gw = gate_width(traits(member).gate, s.key_dim);
  const auto zeros = [](std::int64_t n) {
    return std::vector<double>(static_cast<std::size_t>(n));
  };
  Results r;
  const bool dg_scale = req.values && req.dg_scale && req.which == Reference::kChunked;
  const bool sigma = asked(SliceTask::kBackwardSigma, req);
  if (sigma) {
    r.sigma = ForwardSigma{zeros(s.v_size()), zeros(s.state_size())};
    r.grad_sigma = BackwardSigma{zeros(s.qk_size()),
                                 zeros(s.qk_size()),
                                 zeros(s.v_size()),
                                 zeros(s.tokens * s.v_heads * gw),
                                 zeros(traits(member).delta_rule ? s.tokens * s.v_heads : 0),
                                 zeros(s.state_size())};
  }
  if (dg_scale && gw > 0) r.dg_scale = zeros(s.tokens * s.v_heads * gw);
  if (!req.values) return r;
  r.fwd.o = zeros(s.v_size());
  r.fwd.final_state = zeros(s.state_size());
  r.grads.dq = zeros(s.qk_size());
  r.grads.dk = zeros(s.qk_size());
  r.grads.dv = zeros(s.v_size());
  r.grads.dg = zeros(s.tokens * s.v_heads * gw);
  r.grads.dbeta = zeros(traits(member).delta_rule ? s.tokens * s.v_heads : 0);
  r.grads.dh0 = zeros(s.state_size());
  return r;
}

}  // namespace

Expected<Results> run_sliced(Member member, const Data& d, SliceRequest request, int threads) {
  if (Status st = validate(member, d.problem); !st) return st.error();
  if (request.which != Reference::kTokenSerialForward) {
    if (Status st = validate(d.problem, d.cot); !st) return st.error();
  }
  const Shape& s = d.problem.shape;
  std::vector<Slice> slices;
  for (std::int64_t n = 0; n < s.sequences(); ++n)
    for (std::int64_t hv = 0; hv < s.v_heads; ++hv) slices.push_back(make_slice(member, d, n, hv));
  struct Item {
    std::size_t slice;
    SliceTask task;
  };
  std::vector<Item> items;
  for (SliceTask t : kSliceTasks)
    if (asked(t, request))
      for (std::size_t i = 0; i < slices.size(); ++i) items.push_back({i, t});
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i = next++; i < items.size(); i = next++)
      run_task(member, slices[items[i].slice], items[i].task, request);
  };
  const int pool_size = std::max(
      1, std::min(threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency()),
                  static_cast<int>(items.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < pool_size; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();

  const std::int64_t gw = gate_width(traits(member).gate, s.key_dim);
  Results r = zero_results(member, s, request);
  const bool sigma = asked(SliceTask::kBackwardSigma, request);
  for (const Slice& sl : slices) {  // value-head order within each sequence
    if (!sl.fwd) return sl.fwd.error();
    if (!sl.grads) return sl.grads.error();
    if (!sl.terms) return sl.terms.error();
    if (!sl.sigma) return sl.sigma.error();
    if (!sl.grad_sigma) return sl.grad_sigma.error();
    const std::int64_t b = s.seq_begin(sl.seq);
    const std::int64_t e = s.seq_end(sl.seq);
    const std::int64_t h = sl.hv / (s.v_heads / s.qk_heads);
    scatter(sl.fwd->o, r.fwd.o, b, e, s.v_heads, sl.hv, s.value_dim, false);
    scatter_state(sl.fwd->final_state, r.fwd.final_state, s, sl.seq, sl.hv);
    scatter(sl.grads->dq, r.grads.dq, b, e, s.qk_heads, h, s.key_dim, true);
    scatter(sl.grads->dk, r.grads.dk, b, e, s.qk_heads, h, s.key_dim, true);
    scatter(sl.grads->dv, r.grads.dv, b, e, s.v_heads, sl.hv, s.value_dim, false);
    scatter(sl.grads->dg, r.grads.dg, b, e, s.v_heads, sl.hv, gw, false);
    scatter(sl.grads->dbeta, r.grads.dbeta, b, e, s.v_heads, sl.hv, 1, false);
    scatter_state(sl.grads->dh0, r.grads.dh0, s, sl.seq, sl.hv);
    if (!r.dg_scale.empty())
      scatter(sl.terms->scale, r.dg_scale, b, e, s.v_heads, sl.hv, gw, false);
    if (sigma) {
      scatter(sl.sigma->o, r.sigma.o, b, e, s.v_heads, sl.hv, s.value_dim, false);
      scatter_state(sl.sigma->final_state, r.sigma.final_state, s, sl.seq, sl.hv);
      // dq, dk: a GVA group's value heads add independent errors, so their variances add
      // (declared_backward_sigma's own rule); σ² here, the root below.
      BackwardSigma& gs = r.grad_sigma;
      scatter(squared(sl.grad_sigma->dq), gs.dq, b, e, s.qk_heads, h, s.key_dim, true);
      scatter(squared(sl.grad_sigma->dk), gs.dk, b, e, s.qk_heads, h, s.key_dim, true);
      scatter(sl.grad_sigma->dv, gs.dv, b, e, s.v_heads, sl.hv, s.value_dim, false);
      scatter(sl.grad_sigma->dg, gs.dg, b, e, s.v_heads, sl.hv, gw, false);
      scatter(sl.grad_sigma->dbeta, gs.dbeta, b, e, s.v_heads, sl.hv, 1, false);
      scatter_state(sl.grad_sigma->dh0, gs.dh0, s, sl.seq, sl.hv);
    }
  }
  for (double& x : r.grad_sigma.dq) x = std::sqrt(x);
  for (double& x : r.grad_sigma.dk) x = std::sqrt(x);
  return r;
}

std::vector<NamedOutput> outputs_of(Member member, const Results& r, OpKind op) {
  const MemberTraits tr = traits(member);
  std::vector<NamedOutput> out = {{"o", Output::kO, &r.fwd.o},
                                  {"ht", Output::kFinalState, &r.fwd.final_state}};
  if (op == OpKind::kDecode) return out;
  out.insert(out.end(), {{"dq", Output::kDq, &r.grads.dq},
                         {"dk", Output::kDk, &r.grads.dk},
                         {"dv", Output::kDv, &r.grads.dv}});
  if (tr.gate != GateKind::kNone) out.push_back({"dg", Output::kDg, &r.grads.dg});
  if (tr.delta_rule) out.push_back({"dbeta", Output::kDbeta, &r.grads.dbeta});
  out.push_back({"dh0", Output::kDh0, &r.grads.dh0});
  return out;
}

}  // namespace kcv::glr::verify_detail
