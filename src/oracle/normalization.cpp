// File: src/oracle/normalization.cpp
// Row normalizations along the last dim N: softmax, log_softmax, layernorm, rmsnorm. U = u_c.
//
// softmax (research §6.7, made per element): with m = max x, e_j = exp(x_j - m) and s = sum e_j,
//   the computed e_j errs by e_j*U*|x_j - m| (the rounded argument) plus b_exp(x_j - m) ulps;
//   the sum of positive terms adds accumulation_bound(N, ||e||_2 + s); R = (both)/s is the
//   relative error of s. Then
//     tau_i = rounding_bound(y_i, ulp_div + 0.5 + dr) + err(e_i)/s + y_i*R
//   (the half ulp covers e_i * fl(1/s)). Rows with NaN, with +Inf, or all -Inf are NaN rows.
// log_softmax: y_i = (x_i - m) - log s;
//     tau_i = rounding_bound(y_i, dr) + U|x_i - m| + R + b_t ulps of log s.
// layernorm, two-pass derivation (first order, any summation order within the accumulation
//   model; a Welford or sum/sum-of-squares kernel on data with |mean| ~ std stays inside):
//     A_mu = acc(N, x)/N + 2U|mu|                               error of the mean
//     A_v  = acc(N, q)/N + (2 A_mu sum|d| + 3U sum q)/N + A_mu^2 + 2U var,  q = d^2, d = x - mu
//     eps_s = A_v / (2(var + eps)) + U(3 + 2 b_rs)              relative error of rstd
//             (b_rs = max(ulp_sqrt + ulp_div, ulp_transcendental): 1/sqrt or a library rsqrt)
//     dz_i = A_mu * rstd + |z_i|(2U + eps_s),  z = d * rstd
//     tau_i = rounding_bound(y_i, dr) + |w_i| dz_i + U|z_i w_i|
// rmsnorm: A_ms = acc(N, q)/N + U sum q/N + 2U ms, q = x^2; eps_r as eps_s;
//     tau_i = rounding_bound(y_i, dr) + |w_i||z_i|(eps_r + U).
// Declared: the same formulas evaluated in declared types (compute-type scalars, sequential
// accumulator sums). Values: exact fp64 with Sum2/Dot2; non-finite rows of layernorm are NaN,
// rmsnorm propagates naturally (x * rsqrt(mean(x^2) + eps): Inf in a row gives 0 and NaN).
#include <algorithm>
#include <cmath>
#include <limits>

#include "oracle/compensated.hpp"
#include "oracle/declared.hpp"
#include "oracle/families.hpp"
#include "oracle/mpfr_exact.hpp"
#include "oracle/semantics.hpp"

namespace kcv::oracle {

namespace {

enum class Kind { kSoftmax, kLogSoftmax, kLayerNorm, kRmsNorm };

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Row {
  std::span<const double> x;
  std::size_t offset;  // flat index of the row's first element
};

Row row_of(const EvalContext& ctx, int64_t r) {
  const auto n = static_cast<std::size_t>(ctx.size("N"));
  const std::size_t off = static_cast<std::size_t>(r) * n;
  return Row{std::span<const double>(ctx.in[0]).subspan(off, n), off};
}

double dr(const PrecisionModel& m) { return m.out_dtype == m.compute_dtype ? 0.0 : 0.5; }

double round_c(const PrecisionModel& m, double x) { return round_to(m.compute_dtype, x); }

void set_nan_row(OracleOutput& out, const Row& row) {
  for (std::size_t k = 0; k < row.x.size(); ++k) {
    out.value[row.offset + k] = kNaN;
    out.tau[row.offset + k] = 0.0;
    out.declared[row.offset + k] = kNaN;
  }
}

void set_terms(OracleOutput& out, const Row& row) {
  for (std::size_t k = 0; k < row.x.size(); ++k) out.n_terms[row.offset + k] = static_cast<double>(row.x.size());
}

// ---- softmax family -----------------------------------------------------------------------

/// Max of a row for softmax; NaN when the row is a NaN row (NaN, +Inf, or all -Inf).
double softmax_max(std::span<const double> x) {
  double m = -std::numeric_limits<double>::infinity();
  for (double v : x) {
    if (std::isnan(v) || v == std::numeric_limits<double>::infinity()) return kNaN;
    m = std::max(m, v);
  }
  return std::isinf(m) ? kNaN : m;
}

struct SoftmaxRow {
  double m = 0;
  std::vector<double> e;    // exp(x_j - m)
  std::vector<double> err;  // error bound of the computed e_j
  double s = 0;             // sum e
  double rel_s = 0;         // R: relative error bound of the computed sum
};

SoftmaxRow softmax_row(const EvalContext& ctx, std::span<const double> x, double m) {
  const PrecisionModel& pm = ctx.models[0];
  SoftmaxRow r;
  r.m = m;
  CompensatedSum sum;
  double err_sum = 0;
  for (double v : x) {
    const double e = std::exp(v - m);
    const double err = e == 0.0 ? 0.0
                                : e * pm.u_c * std::fabs(v - m) +
                                      ulp_error(pm, e, exp_ulp_budget(*ctx.profile, v - m));
    r.e.push_back(e);
    r.err.push_back(err);
    sum.add(e);
    err_sum += err;
  }
  r.s = sum.sum();
  const double n = static_cast<double>(x.size());
  r.rel_s = (err_sum + accumulation_bound(pm, n, sum.l2(), r.s, r.s)) / r.s;
  return r;
}

/// Declared-type softmax pieces: rounded exps and their sequential sum.
std::pair<std::vector<double>, double> declared_exps(const PrecisionModel& pm, std::span<const double> x,
                                                     double m) {
  std::vector<double> e;
  DeclaredSum sum = declared_sum(pm);
  for (double v : x) {
    e.push_back(round_c(pm, std::exp(round_c(pm, v - m))));
    sum.add(e.back());
  }
  return {e, sum.value()};
}

void eval_softmax(const EvalContext& ctx, const Row& row, bool log, OracleOutput& out) {
  const PrecisionModel& pm = ctx.models[0];
  const Profile& p = *ctx.profile;
  const double m = softmax_max(row.x);
  if (std::isnan(m)) return set_nan_row(out, row);
  const SoftmaxRow r = softmax_row(ctx, row.x, m);
  const auto [de, ds] = declared_exps(pm, row.x, m);
  const double log_s = std::log(r.s);
  const double dlog_s = round_c(pm, std::log(ds));
  for (std::size_t k = 0; k < row.x.size(); ++k) {
    const std::size_t i = row.offset + k;
    const double d = row.x[k] - m;
    const double y = log ? d - log_s : r.e[k] / r.s;
    out.value[i] = finish_value(y, out.dtype, p);
    if (!std::isfinite(out.value[i])) {
      out.tau[i] = 0.0;
    } else if (log) {
      out.tau[i] = rounding_bound(pm, y, dr(pm)) + pm.u_c * std::fabs(d) + r.rel_s +
                   ulp_error(pm, log_s, p.ulp_transcendental);
    } else {
      out.tau[i] = rounding_bound(pm, y, p.ulp_div + 0.5 + dr(pm)) + r.err[k] / r.s + y * r.rel_s;
    }
    const double dy = log ? round_c(pm, round_c(pm, d) - dlog_s) : round_c(pm, de[k] / ds);
    out.declared[i] = finish_declared(dy, out.dtype, p);
  }
}

// ---- layernorm / rmsnorm ------------------------------------------------------------------

double rsqrt_ulps(const Profile& p) {
  return std::max(p.ulp_sqrt + p.ulp_div, p.ulp_transcendental);
}

struct Moments {
  double mean = 0, var = 0;  // var: biased, sum d^2 / N (layernorm) or mean of x^2 (rmsnorm)
  double a_mean = 0;         // error bound of the mean (layernorm only)
  double a_var = 0;          // error bound of var / ms
};

Moments layernorm_moments(const PrecisionModel& pm, std::span<const double> x) {
  const double n = static_cast<double>(x.size());
  const double u = pm.u_c;
  CompensatedSum sx;
  for (double v : x) sx.add(v);
  Moments mo;
  mo.mean = sx.sum() / n;
  mo.a_mean = accumulation_bound(pm, n, sx.l2(), std::fabs(sx.sum()), sx.sum_abs()) / n +
              2.0 * u * std::fabs(mo.mean);
  CompensatedSum sq;
  double sum_abs_d = 0;
  for (double v : x) {
    sq.add_product(v - mo.mean, v - mo.mean);
    sum_abs_d += std::fabs(v - mo.mean);
  }
  const double q = sq.sum();
  mo.var = q / n;
  mo.a_var = accumulation_bound(pm, n, sq.l2(), q, q) / n +
             (2.0 * mo.a_mean * sum_abs_d + 3.0 * u * q) / n + mo.a_mean * mo.a_mean +
             2.0 * u * mo.var;
  return mo;
}

Moments rms_moments(const PrecisionModel& pm, std::span<const double> x) {
  const double n = static_cast<double>(x.size());
  CompensatedSum sq;
  for (double v : x) sq.add_product(v, v);
  const double q = sq.sum();
  Moments mo;
  mo.var = q / n;
  mo.a_var = accumulation_bound(pm, n, sq.l2(), q, q) / n + pm.u_c * q / n + 2.0 * pm.u_c * mo.var;
  return mo;
}

/// Relative error bound of the computed 1/sqrt(v + eps).
double rstd_error(const PrecisionModel& pm, const Profile& p, const Moments& mo, double eps) {
  return mo.a_var / (2.0 * (mo.var + eps)) + pm.u_c * (3.0 + 2.0 * rsqrt_ulps(p));
}

double declared_rstd(const PrecisionModel& pm, double v, double eps) {
  return round_c(pm, 1.0 / round_c(pm, std::sqrt(round_c(pm, v + eps))));
}

bool all_finite(std::span<const double> x) {
  return std::all_of(x.begin(), x.end(), [](double v) { return std::isfinite(v); });
}

void eval_layernorm(const EvalContext& ctx, const Row& row, OracleOutput& out) {
  const PrecisionModel& pm = ctx.models[0];
  const Profile& p = *ctx.profile;
  if (!all_finite(row.x)) return set_nan_row(out, row);
  const double eps = ctx.param("eps");
  const Moments mo = layernorm_moments(pm, row.x);
  const double rstd = 1.0 / std::sqrt(mo.var + eps);
  const double eps_s = rstd_error(pm, p, mo, eps);
  // declared: two-pass in declared types
  const double n = static_cast<double>(row.x.size());
  DeclaredSum dsum = declared_sum(pm);
  for (double v : row.x) dsum.add(v);
  const double dmean = round_c(pm, dsum.value() / n);
  DeclaredSum dsq = declared_sum(pm);
  for (double v : row.x) dsq.add_product(round_c(pm, v - dmean), round_c(pm, v - dmean));
  const double drstd = declared_rstd(pm, round_c(pm, dsq.value() / n), eps);
  for (std::size_t k = 0; k < row.x.size(); ++k) {
    const std::size_t i = row.offset + k;
    const double w = ctx.in[1][k];
    const double b = ctx.in[2][k];
    const double z = (row.x[k] - mo.mean) * rstd;
    const double y = z * w + b;
    out.value[i] = finish_value(y, out.dtype, p);
    const double dz = mo.a_mean * rstd + std::fabs(z) * (2.0 * pm.u_c + eps_s);
    out.tau[i] = std::isfinite(out.value[i])
                     ? rounding_bound(pm, y, dr(pm)) + std::fabs(w) * dz + pm.u_c * std::fabs(z * w)
                     : 0.0;
    const double dzd = round_c(pm, round_c(pm, row.x[k] - dmean) * drstd);
    out.declared[i] = finish_declared(round_c(pm, round_c(pm, dzd * w) + b), out.dtype, p);
  }
}

void eval_rmsnorm(const EvalContext& ctx, const Row& row, OracleOutput& out) {
  const PrecisionModel& pm = ctx.models[0];
  const Profile& p = *ctx.profile;
  const double eps = ctx.param("eps");
  const Moments mo = rms_moments(pm, row.x);
  const double r = 1.0 / std::sqrt(mo.var + eps);
  const double eps_r = rstd_error(pm, p, mo, eps);
  DeclaredSum dsq = declared_sum(pm);
  for (double v : row.x) dsq.add_product(v, v);
  const double dr_ = declared_rstd(pm, round_c(pm, dsq.value() / static_cast<double>(row.x.size())), eps);
  for (std::size_t k = 0; k < row.x.size(); ++k) {
    const std::size_t i = row.offset + k;
    const double w = ctx.in[1][k];
    const double z = row.x[k] * r;
    const double y = z * w;
    out.value[i] = finish_value(y, out.dtype, p);
    out.tau[i] = std::isfinite(out.value[i]) && std::isfinite(mo.var)
                     ? rounding_bound(pm, y, dr(pm)) + std::fabs(w) * std::fabs(z) * (eps_r + pm.u_c)
                     : 0.0;
    out.declared[i] = finish_declared(round_c(pm, round_c(pm, row.x[k] * dr_) * w), out.dtype, p);
  }
}

void evaluate(Kind kind, const EvalContext& ctx, std::vector<OracleOutput>& outs) {
  OracleOutput& out = outs[0];
  const int64_t rows = ctx.size("M");
  for (int64_t r = 0; r < rows; ++r) {
    const Row row = row_of(ctx, r);
    set_terms(out, row);
    switch (kind) {
      case Kind::kSoftmax: eval_softmax(ctx, row, false, out); break;
      case Kind::kLogSoftmax: eval_softmax(ctx, row, true, out); break;
      case Kind::kLayerNorm: eval_layernorm(ctx, row, out); break;
      case Kind::kRmsNorm: eval_rmsnorm(ctx, row, out); break;
    }
  }
}

// ---- MPFR ---------------------------------------------------------------------------------

std::optional<double> exact_softmax(std::span<const double> x, std::size_t k, bool log) {
  const double m = softmax_max(x);
  if (std::isnan(m) || !all_finite(x)) return std::nullopt;
  std::vector<Mp> e;
  for (double v : x) e.push_back(mp_exp(mp_sub(Mp(v), Mp(m))));
  const Mp s = mp_sum(e);
  if (log) return mp_sub(mp_sub(Mp(x[k]), Mp(m)), mp_log(s)).to_double();
  return mp_div(e[k], s).to_double();
}

std::optional<double> exact_norm(const EvalContext& ctx, std::span<const double> x, std::size_t k,
                                 bool layer) {
  if (!all_finite(x)) return std::nullopt;
  const Mp n(static_cast<double>(x.size()));
  const Mp mean = layer ? mp_div(mp_sum(x), n) : Mp(0.0);
  std::vector<Mp> sq;
  for (double v : x) {
    const Mp d = mp_sub(Mp(v), mean);
    sq.push_back(mp_mul(d, d));
  }
  const Mp var = mp_div(mp_sum(sq), n);
  const Mp rstd = mp_div(Mp(1.0), mp_sqrt(mp_add(var, Mp(ctx.param("eps")))));
  Mp y = mp_mul(mp_mul(mp_sub(Mp(x[k]), mean), rstd), Mp(ctx.in[1][k]));
  if (layer) y = mp_add(y, Mp(ctx.in[2][k]));
  return y.to_double();
}

std::optional<double> exact(Kind kind, const EvalContext& ctx, int64_t index) {
  const int64_t n = ctx.size("N");
  const Row row = row_of(ctx, index / n);
  const auto k = static_cast<std::size_t>(index % n);
  switch (kind) {
    case Kind::kSoftmax: return exact_softmax(row.x, k, false);
    case Kind::kLogSoftmax: return exact_softmax(row.x, k, true);
    case Kind::kLayerNorm: return exact_norm(ctx, row.x, k, true);
    case Kind::kRmsNorm: return exact_norm(ctx, row.x, k, false);
  }
  return std::nullopt;
}

OpSignature norm_sig(std::string name, std::string summary) {
  OpSignature s;
  s.name = std::move(name);
  s.summary = std::move(summary);
  s.op_class = OpClass::kNormalization;
  s.inputs.push_back(tensor("x", {"M", "N"}));
  s.outputs.push_back(tensor("out", {"M", "N"}));
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

void add_normalization_ops(OpList& ops) {
  OpSignature softmax = norm_sig("softmax", "exp(x - max) / sum exp(x - max) along N");
  softmax.uses_exp = true;
  add(ops, Kind::kSoftmax, std::move(softmax));
  OpSignature log_softmax = norm_sig("log_softmax", "(x - max) - log sum exp(x - max) along N");
  log_softmax.uses_exp = true;
  add(ops, Kind::kLogSoftmax, std::move(log_softmax));
  OpSignature ln = norm_sig("layernorm", "(x - mean) / sqrt(var + eps) * weight + bias along N");
  ln.inputs.push_back(tensor("weight", {"N"}));
  ln.inputs.push_back(tensor("bias", {"N"}));
  ln.default_params = {{"eps", 1e-5}};
  add(ops, Kind::kLayerNorm, std::move(ln));
  OpSignature rms = norm_sig("rmsnorm", "x / sqrt(mean(x^2) + eps) * weight along N");
  rms.inputs.push_back(tensor("weight", {"N"}));
  rms.default_params = {{"eps", 1e-6}};
  add(ops, Kind::kRmsNorm, std::move(rms));
}

}  // namespace kcv::oracle
