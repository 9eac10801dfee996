// File: src/oracle/reduction.cpp
// Row reductions along the last dim N of x[M, N]: sum, mean, max, argmax.
//   sum:    value Sum2; tau = rounding_bound(y, 0) + accumulation_bound(N, S) with
//           S = ||x||_2 + |sum x| (strict: gamma_{N-1} * sum|x|); declared: sequential sum in
//           the accumulator dtype, rounded to the output dtype.
//   mean:   sum / N; tau = accumulation/N + rounding_bound(y, 0.5 + ulp_div + dr): the extra half
//           ulp is the reciprocal-multiply variant (s * fl(1/N)), dr the compute rounding when
//           the output type differs.
//   max:    a selection under the profile (NaN: IEEE maximum or maxNum; -0 < +0);
//           tau = output rounding only.
//   argmax: first index of the maximum (ties, including -0 == +0, go to the lower index);
//           under NaN-propagating profiles the first NaN wins, under maxNum NaNs are skipped
//           (all-NaN row: 0). tau = 0: exact.
// Non-finite sums follow IEEE: +Inf and -Inf together give NaN.
#include <cmath>
#include <limits>

#include "oracle/compensated.hpp"
#include "oracle/declared.hpp"
#include "oracle/families.hpp"
#include "oracle/mpfr_exact.hpp"
#include "oracle/semantics.hpp"

namespace kcv::oracle {

namespace {

enum class Kind { kSum, kMean, kMax, kArgmax };

std::span<const double> row(const EvalContext& ctx, int64_t r) {
  const int64_t n = ctx.size("N");
  return std::span<const double>(ctx.in[0]).subspan(static_cast<std::size_t>(r * n),
                                                    static_cast<std::size_t>(n));
}

double dr(const PrecisionModel& m) { return m.out_dtype == m.compute_dtype ? 0.0 : 0.5; }

void fill_sum(const EvalContext& ctx, std::span<const double> x, bool mean, OracleOutput& out,
              std::size_t i) {
  const PrecisionModel& m = ctx.models[0];
  CompensatedSum acc;
  DeclaredSum decl = declared_sum(m);
  for (double v : x) {
    acc.add(v);
    decl.add(v);
  }
  const double n = static_cast<double>(x.size());
  const double s = acc.sum();
  const double exact = mean ? s / n : s;
  double tau_acc = accumulation_bound(m, n, acc.l2(), std::fabs(s), acc.sum_abs());
  double declared = decl.value();
  if (mean) {
    tau_acc /= n;
    declared = round_to(m.compute_dtype, declared / n);
  }
  out.value[i] = finish_value(exact, out.dtype, *ctx.profile);
  const double ulps = mean ? 0.5 + ctx.profile->ulp_div + dr(m) : 0.0;
  out.tau[i] = std::isfinite(out.value[i]) ? rounding_bound(m, out.value[i], ulps) + tau_acc : 0.0;
  out.declared[i] = finish_declared(declared, out.dtype, *ctx.profile);
  out.n_terms[i] = n;
}

double row_max(std::span<const double> x, const Profile& p) {
  double best = std::numeric_limits<double>::quiet_NaN();
  bool first = true;
  for (double v : x) {
    best = first ? v : max_of(best, v, p);
    first = false;
  }
  return x.empty() ? -std::numeric_limits<double>::infinity() : best;
}

int64_t row_argmax(std::span<const double> x, const Profile& p) {
  int64_t best = -1;
  for (std::size_t k = 0; k < x.size(); ++k) {
    if (std::isnan(x[k])) {
      if (p.nan_minmax == NanMinMax::kPropagate) return static_cast<int64_t>(k);
      continue;
    }
    if (best < 0 || x[k] > x[static_cast<std::size_t>(best)]) best = static_cast<int64_t>(k);
  }
  return best < 0 ? 0 : best;
}

void evaluate(Kind kind, const EvalContext& ctx, std::vector<OracleOutput>& outs) {
  OracleOutput& out = outs[0];
  const Profile& p = *ctx.profile;
  for (std::size_t r = 0; r < out.value.size(); ++r) {
    const auto x = row(ctx, static_cast<int64_t>(r));
    if (kind == Kind::kSum || kind == Kind::kMean) {
      fill_sum(ctx, x, kind == Kind::kMean, out, r);
      continue;
    }
    out.n_terms[r] = static_cast<double>(x.size());
    if (kind == Kind::kMax) {
      const double y = row_max(x, p);
      out.value[r] = finish_value(y, out.dtype, p);
      out.tau[r] = std::isfinite(y) ? rounding_bound(ctx.models[0], y, 0.0) : 0.0;
      out.declared[r] = finish_declared(y, out.dtype, p);
    } else {
      const auto idx = static_cast<double>(row_argmax(x, p));
      out.value[r] = idx;
      out.tau[r] = 0.0;
      out.declared[r] = idx;
    }
  }
}

std::optional<double> exact(Kind kind, const EvalContext& ctx, int64_t r) {
  if (kind != Kind::kSum && kind != Kind::kMean) return std::nullopt;  // selections are exact
  const auto x = row(ctx, r);
  for (double v : x) {
    if (!std::isfinite(v)) return std::nullopt;
  }
  if (kind == Kind::kSum) return exact_sum(x);
  Mp n(static_cast<double>(x.size()));
  return mp_div(mp_sum(x), n).to_double();
}

OpSignature reduction_sig(std::string name, std::string summary) {
  OpSignature s;
  s.name = std::move(name);
  s.summary = std::move(summary);
  s.op_class = OpClass::kReduction;
  s.inputs.push_back(tensor("x", {"M", "N"}));
  s.outputs.push_back(tensor("out", {"M"}));
  s.reference_sizes = {{"M", 16}, {"N", 1024}};
  s.reduction_dim = std::string("N");
  return s;
}

void add(OpList& ops, Kind kind, OpSignature sig) {
  ops.push_back(std::make_unique<TableOp>(
      std::move(sig),
      [kind](const EvalContext& ctx, std::vector<OracleOutput>& outs) { evaluate(kind, ctx, outs); },
      [kind](const EvalContext& ctx, int, int64_t i) { return exact(kind, ctx, i); }));
}

}  // namespace

void add_reduction_ops(OpList& ops) {
  add(ops, Kind::kSum, reduction_sig("sum", "row sums along N"));
  add(ops, Kind::kMean, reduction_sig("mean", "row means along N"));
  OpSignature max_sig = reduction_sig("max", "row maxima along N, profile NaN semantics");
  max_sig.uses_minmax = true;
  add(ops, Kind::kMax, std::move(max_sig));
  OpSignature arg = reduction_sig("argmax", "index of the first row maximum (i64)");
  arg.uses_minmax = true;
  arg.index_output = true;
  add(ops, Kind::kArgmax, std::move(arg));
}

}  // namespace kcv::oracle
