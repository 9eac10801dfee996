// File: src/oracle/elementwise.cpp
// Elementwise ops: add, mul, div, maximum, sqrt, exp, relu, gelu (erf form), gelu_tanh, sigmoid,
// clamp. Values are exact fp64 evaluations in numerically stable forms (1 + erf(z) as erfc(-z),
// sigmoid through exp(-|x|)), so the reference is accurate where a conforming fp32 kernel is
// not; the bound then admits the conforming kernel's cancellation instead of hiding it in the
// value. Bounds (tau), with U = u_c and "dr" = 0.5 ulp when the output type differs from the
// compute type (one more rounding):
//   add, mul                 rounding_bound(y, dr)
//   div / sqrt / exp         rounding_bound(y, profile budget + dr)
//   maximum, relu, clamp     rounding_bound(y, 0)       (a selection: only the output rounding)
//   sigmoid = 1/(1+e), e = exp(-x): relative error of d = 1+e is e/(1+e)*b_e*2U + U, plus the
//            division's budget; when exp(-x) overflows the compute type a conforming kernel
//            returns 0, so tau also admits |y|.
//   gelu = x/2 * (1 + erf(z)), z = x/sqrt2: absolute error of t = 1 + erf(z) is
//            erf'(z)*2U|z| (argument) + b_t ulps of erf + U*t (the add); times |x|/2.
//   gelu_tanh likewise with v = k(x + a x^3): dv = k(4U|a x^3| + U|x + a x^3|) + 2U|v|,
//            dt = (1 - tanh^2 v) dv + b ulps of tanh + U(1 + tanh v).
// relu follows the profile's max semantics (relu = maximum(x, 0): NaN -> 0 under maxNum);
// gelu(-Inf) is NaN, as the x*(1+erf) formula gives (PyTorch does the same).
#include <cmath>
#include <numbers>

#include "oracle/families.hpp"
#include "oracle/mpfr_exact.hpp"
#include "oracle/semantics.hpp"

namespace kcv::oracle {

namespace {

struct Args {
  double x;
  double y;  // second operand (binary ops)
  const EvalContext& ctx;
  const PrecisionModel& m;
  const Profile& p;
};

using ValueFn = double (*)(const Args&);
using TauFn = double (*)(const Args&, double ref);
using ExactFn = std::optional<Mp> (*)(const Args&);

struct Def {
  OpSignature sig;
  ValueFn value;
  TauFn tau;
  ExactFn exact;  // nullptr: the fp64 value is already exact (selections)
};

constexpr double kGeluTanhA = 0.044715;
const double kSqrt2OverPi = std::sqrt(2.0 / std::numbers::pi);

double dr(const PrecisionModel& m) { return m.out_dtype == m.compute_dtype ? 0.0 : 0.5; }

// ---- values -------------------------------------------------------------------------------
double v_add(const Args& a) { return a.x + a.y; }
double v_mul(const Args& a) { return a.x * a.y; }
double v_div(const Args& a) { return a.x / a.y; }
double v_maximum(const Args& a) { return max_of(a.x, a.y, a.p); }
double sqrt_arg(const Args& a) {
  return flush_if(a.ctx.in_dtypes[0], a.x, a.p.flush_libm_inputs || a.p.flush_subnormals);
}
double v_sqrt(const Args& a) { return std::sqrt(sqrt_arg(a)); }
double v_exp(const Args& a) { return std::exp(a.x); }
double v_relu(const Args& a) { return max_of(a.x, 0.0, a.p); }
double v_clamp(const Args& a) {
  return clamp_of(a.x, a.ctx.param("min"), a.ctx.param("max"), a.p);
}
double v_sigmoid(const Args& a) {
  if (a.x >= 0) return 1.0 / (1.0 + std::exp(-a.x));
  const double e = std::exp(a.x);
  return e / (1.0 + e);
}
double v_gelu(const Args& a) { return 0.5 * a.x * std::erfc(-a.x / std::numbers::sqrt2); }
double v_gelu_tanh(const Args& a) {
  const double v = kSqrt2OverPi * (a.x + kGeluTanhA * a.x * a.x * a.x);
  return a.x / (1.0 + std::exp(-2.0 * v));  // = x/2 * (1 + tanh v), without cancellation
}

// ---- bounds -------------------------------------------------------------------------------
double t_rounded(const Args& a, double r) { return rounding_bound(a.m, r, dr(a.m)); }
double t_select(const Args& a, double r) { return rounding_bound(a.m, r, 0.0); }
double t_div(const Args& a, double r) { return rounding_bound(a.m, r, a.p.ulp_div + dr(a.m)); }
double t_sqrt(const Args& a, double r) { return rounding_bound(a.m, r, a.p.ulp_sqrt + dr(a.m)); }
double t_exp(const Args& a, double r) {
  return rounding_bound(a.m, r, exp_ulp_budget(a.p, a.x) + dr(a.m));
}

double t_sigmoid(const Args& a, double r) {
  const double u = a.m.u_c;
  const double e = std::exp(-a.x);
  const double b_e = std::max(a.p.ulp_transcendental, exp_ulp_budget(a.p, -a.x));
  const double share = std::isinf(e) ? 1.0 : e / (1.0 + e);
  const double rel_d = share * b_e * 2.0 * u + u;
  double tau = rounding_bound(a.m, r, a.p.ulp_div + dr(a.m)) + std::fabs(r) * rel_d;
  if (-a.x > std::log(max_finite(a.m.compute_dtype))) tau += std::fabs(r);  // exp overflows
  return tau;
}

double t_gelu(const Args& a, double r) {
  const double u = a.m.u_c;
  const double z = a.x / std::numbers::sqrt2;
  const double erf_z = std::erf(z);
  const double t = std::erfc(-z);
  const double d_arg = 2.0 / std::sqrt(std::numbers::pi) * std::exp(-z * z) * 2.0 * u * std::fabs(z);
  const double dt = d_arg + ulp_error(a.m, erf_z, a.p.ulp_transcendental) + u * t;
  return rounding_bound(a.m, r, dr(a.m)) + 0.5 * std::fabs(a.x) * dt;
}

double t_gelu_tanh(const Args& a, double r) {
  const double u = a.m.u_c;
  const double c3 = kGeluTanhA * a.x * a.x * a.x;
  const double s = a.x + c3;
  const double v = kSqrt2OverPi * s;
  const double th = std::tanh(v);
  const double dv = kSqrt2OverPi * (4.0 * u * std::fabs(c3) + u * std::fabs(s)) + 2.0 * u * std::fabs(v);
  const double b = std::max(a.p.ulp_transcendental, exp_ulp_budget(a.p, 2.0 * v));
  const double dt = (1.0 - th * th) * dv + ulp_error(a.m, th, b) + u * (1.0 + th);
  return rounding_bound(a.m, r, dr(a.m)) + 0.5 * std::fabs(a.x) * dt;
}

// ---- MPFR ---------------------------------------------------------------------------------
std::optional<Mp> e_add(const Args& a) { return mp_add(Mp(a.x), Mp(a.y)); }
std::optional<Mp> e_mul(const Args& a) { return mp_mul(Mp(a.x), Mp(a.y)); }
std::optional<Mp> e_div(const Args& a) { return mp_div(Mp(a.x), Mp(a.y)); }
std::optional<Mp> e_sqrt(const Args& a) { return mp_sqrt(Mp(sqrt_arg(a))); }
std::optional<Mp> e_exp(const Args& a) { return mp_exp(Mp(a.x)); }
std::optional<Mp> e_sigmoid(const Args& a) {
  return mp_div(Mp(1.0), mp_add(Mp(1.0), mp_exp(Mp(-a.x))));
}
std::optional<Mp> e_gelu(const Args& a) {
  Mp sqrt2(2.0);
  mpfr_sqrt(sqrt2.get(), sqrt2.get(), MPFR_RNDN);
  return mp_mul(Mp(0.5 * a.x), mp_erfc(mp_div(Mp(-a.x), sqrt2)));
}
std::optional<Mp> e_gelu_tanh(const Args& a) {
  Mp k;
  mpfr_const_pi(k.get(), MPFR_RNDN);
  k = mp_sqrt(mp_div(Mp(2.0), k));
  Mp c(0.0);
  mpfr_set_str(c.get(), "0.044715", 10, MPFR_RNDN);
  const Mp x(a.x);
  const Mp inner = mp_add(x, mp_mul(c, mp_mul(x, mp_mul(x, x))));
  const Mp t = mp_add(Mp(1.0), mp_tanh(mp_mul(k, inner)));
  return mp_mul(Mp(0.5 * a.x), t);
}

// ---- signatures ---------------------------------------------------------------------------
OpSignature elementwise_sig(std::string name, std::string summary, int arity,
                            ValueDomain second = ValueDomain::kAny,
                            ValueDomain first = ValueDomain::kAny) {
  OpSignature s;
  s.name = std::move(name);
  s.summary = std::move(summary);
  s.op_class = OpClass::kElementwise;
  s.inputs.push_back(tensor("x", {"M", "N"}, first));
  if (arity == 2) s.inputs.push_back(tensor("y", {"M", "N"}, second));
  s.outputs.push_back(tensor("out", {"M", "N"}));
  s.reference_sizes = {{"M", 16}, {"N", 1024}};
  return s;
}

std::vector<Def> definitions() {
  std::vector<Def> d;
  d.push_back({elementwise_sig("add", "x + y", 2), v_add, t_rounded, e_add});
  d.push_back({elementwise_sig("mul", "x * y", 2), v_mul, t_rounded, e_mul});
  d.push_back({elementwise_sig("div", "x / y", 2, ValueDomain::kNonZero), v_div, t_div, e_div});
  d.push_back({elementwise_sig("maximum", "elementwise max(x, y), profile NaN semantics", 2),
               v_maximum, t_select, nullptr});
  d.back().sig.uses_minmax = true;
  d.push_back({elementwise_sig("sqrt", "sqrt(x)", 1, ValueDomain::kAny, ValueDomain::kPositive),
               v_sqrt, t_sqrt, e_sqrt});
  d.push_back({elementwise_sig("exp", "exp(x)", 1), v_exp, t_exp, e_exp});
  d.back().sig.uses_exp = true;
  d.push_back({elementwise_sig("relu", "maximum(x, 0), profile NaN semantics", 1), v_relu,
               t_select, nullptr});
  d.back().sig.uses_minmax = true;
  d.push_back({elementwise_sig("gelu", "x/2 * (1 + erf(x/sqrt(2)))", 1), v_gelu, t_gelu, e_gelu});
  d.push_back({elementwise_sig("gelu_tanh", "x/2 * (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3)))", 1),
               v_gelu_tanh, t_gelu_tanh, e_gelu_tanh});
  d.push_back({elementwise_sig("sigmoid", "1 / (1 + exp(-x))", 1), v_sigmoid, t_sigmoid,
               e_sigmoid});
  d.push_back({elementwise_sig("clamp", "min(max(x, min), max), profile NaN semantics", 1),
               v_clamp, t_select, nullptr});
  d.back().sig.default_params = {{"min", -0.5}, {"max", 0.5}};
  d.back().sig.uses_minmax = true;
  return d;
}

Args args_at(const EvalContext& ctx, int64_t i) {
  const auto k = static_cast<std::size_t>(i);
  const double y = ctx.in.size() > 1 ? ctx.in[1][k] : 0.0;
  return Args{ctx.in[0][k], y, ctx, ctx.models[0], *ctx.profile};
}

void evaluate_all(const Def& def, const EvalContext& ctx, std::vector<OracleOutput>& outs) {
  OracleOutput& out = outs[0];
  for (std::size_t i = 0; i < out.value.size(); ++i) {
    const Args a = args_at(ctx, static_cast<int64_t>(i));
    const double exact = def.value(a);
    const double ref = finish_value(exact, out.dtype, a.p);
    out.value[i] = ref;
    out.tau[i] = std::isfinite(ref) ? def.tau(a, ref) : 0.0;
    out.declared[i] = finish_declared(exact, out.dtype, a.p);
  }
}

std::optional<double> exact_at(const Def& def, const EvalContext& ctx, int64_t i) {
  const Args a = args_at(ctx, i);
  if (def.exact == nullptr || !std::isfinite(a.x) || !std::isfinite(a.y)) return std::nullopt;
  if (!std::isfinite(def.value(a))) return std::nullopt;
  auto mp = def.exact(a);
  if (!mp) return std::nullopt;
  return mp->to_double();
}

}  // namespace

void add_elementwise_ops(OpList& ops) {
  for (Def& def : definitions()) {
    const Def copy = def;
    ops.push_back(std::make_unique<TableOp>(
        def.sig,
        [copy](const EvalContext& ctx, std::vector<OracleOutput>& outs) {
          evaluate_all(copy, ctx, outs);
        },
        [copy](const EvalContext& ctx, int, int64_t i) { return exact_at(copy, ctx, i); }));
  }
}

}  // namespace kcv::oracle
