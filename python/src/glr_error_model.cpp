// File: python/src/glr_error_model.cpp
// kcv._glr's binding of the GLR error model (include/kcv/glr/error_model.hpp), the one place the
// bound is computed; glr/check/error_model.py only reshapes tensors for it:
//   model_scale(dims, cu_seqlens, g)        -> (N, G)
//   describe_model(N, G)                     -> one line for reports
//   tau(output, ref, dims, cu_seqlens, gate_width, N, G, terms, sigma) -> tau per element
//   dg_terms(<problem>, d_o, d_final_state)  -> (scale, total) per element of dg
//   declared_sigma(<problem>, grade)         -> (sigma_o, sigma_final_state)
//   declared_backward_sigma(<problem>, d_o, d_final_state, grade) -> [sigma of dq, dk, dv, dg,
//                                               dbeta, dh0] (la, ssd, deltanet, gdn; empty where
//                                               the member has no such gradient)
//   forward_bounds(<problem>, grade)         -> (tau_o, tau_final_state) against the fp64 chunked
//                                               reference of the same problem
//   backward_bounds(<problem>, d_o, d_final_state, grade) -> [tau of dq, dk, dv, dg, dbeta, dh0]
//                                               (empty where the member has no such gradient)
// <problem> = member, dims, cu_seqlens, q, k, v, g, beta, h0, scale, v_first as in ref_forward.
// Outputs are named "o", "ht", "dq", "dk", "dv", "dg", "dbeta", "dh0"; grades "fp32", "bf16".
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <span>

#include "glr_common.hpp"
#include "kcv/glr/chunked.hpp"
#include "kcv/glr/error_model.hpp"

namespace kcv_python_glr {
namespace {

using kcv::glr::Output;

Output output_of(const std::string& name) {
  static const std::pair<const char*, Output> kNames[] = {
      {"o", Output::kO},         {"ht", Output::kFinalState}, {"dq", Output::kDq},
      {"dk", Output::kDk},       {"dv", Output::kDv},         {"dg", Output::kDg},
      {"dbeta", Output::kDbeta}, {"dh0", Output::kDh0}};
  for (const auto& [n, out] : kNames)
    if (name == n) return out;
  throw std::invalid_argument("output: unknown output '" + name + "'");
}

kcv::glr::Grade grade_of(const std::string& name) {
  if (name == "fp32") return kcv::glr::Grade::kFp32;
  if (name == "bf16") return kcv::glr::Grade::kBf16;
  throw std::invalid_argument("grade: expected 'fp32' or 'bf16', got '" + name + "'");
}

std::span<const double> span_of(const std::optional<HostArray>& a) {
  if (!a) return {};
  return {a->data(), a->size()};
}

kcv::glr::Shape shape_of(const std::array<std::int64_t, 5>& dims, std::vector<std::int64_t> cu) {
  kcv::glr::Shape s;
  s.tokens = dims[0];
  s.qk_heads = dims[1];
  s.v_heads = dims[2];
  s.key_dim = dims[3];
  s.value_dim = dims[4];
  s.cu_seqlens = std::move(cu);
  return s;
}

std::pair<std::int64_t, double> model_scale(std::array<std::int64_t, 5> dims,
                                            std::vector<std::int64_t> cu_seqlens,
                                            std::optional<HostArray> g) {
  kcv::glr::Problem p;
  p.shape = shape_of(dims, std::move(cu_seqlens));
  p.g = to_vector(g);
  const kcv::glr::ModelScale m = kcv::glr::model_scale(p);
  return {m.depth, m.log_decay};
}

NumpyArray tau(const std::string& output, HostArray ref, std::array<std::int64_t, 5> dims,
               std::vector<std::int64_t> cu_seqlens, std::int64_t gate_width, std::int64_t depth,
               double log_decay, std::optional<HostArray> terms, std::optional<HostArray> sigma) {
  const Output out = output_of(output);
  auto t = kcv::glr::tau(out, {ref.data(), ref.size()}, shape_of(dims, std::move(cu_seqlens)),
                         gate_width, {depth, log_decay}, kcv::glr::output_unit_roundoff(out),
                         span_of(terms), span_of(sigma));
  if (!t) raise(t.error());
  return to_numpy(std::move(*t));
}

std::pair<NumpyArray, NumpyArray> dg_terms(int member_code, std::array<std::int64_t, 5> dims,
                                           std::vector<std::int64_t> cu_seqlens,
                                           std::optional<HostArray> q, std::optional<HostArray> k,
                                           std::optional<HostArray> v, std::optional<HostArray> g,
                                           std::optional<HostArray> beta,
                                           std::optional<HostArray> h0, double scale, bool v_first,
                                           std::optional<HostArray> d_o,
                                           std::optional<HostArray> d_final_state) {
  const Member member = member_of(member_code);
  const kcv::glr::Problem p =
      make_problem(member, dims, std::move(cu_seqlens), q, k, v, g, beta, h0, scale, v_first);
  kcv::glr::Cotangents cot{to_vector(d_o), to_vector(d_final_state)};
  if (auto st = kcv::glr::validate(p, cot); !st) raise(st.error());
  std::optional<kcv::Expected<kcv::glr::DgTerms>> t;
  {
    nb::gil_scoped_release release;
    t.emplace(kcv::glr::dg_terms(member, p, cot));
  }
  if (!*t) raise(t->error());
  return {to_numpy(std::move((*t)->scale)), to_numpy(std::move((*t)->total))};
}

std::pair<NumpyArray, NumpyArray> declared_sigma(
    int member_code, std::array<std::int64_t, 5> dims, std::vector<std::int64_t> cu_seqlens,
    std::optional<HostArray> q, std::optional<HostArray> k, std::optional<HostArray> v,
    std::optional<HostArray> g, std::optional<HostArray> beta, std::optional<HostArray> h0,
    double scale, bool v_first, const std::string& grade) {
  const Member member = member_of(member_code);
  const kcv::glr::Problem p =
      make_problem(member, dims, std::move(cu_seqlens), q, k, v, g, beta, h0, scale, v_first);
  const kcv::glr::PrecisionContract contract = kcv::glr::contract_for(grade_of(grade));
  std::optional<kcv::Expected<kcv::glr::ForwardSigma>> s;
  {
    nb::gil_scoped_release release;
    s.emplace(kcv::glr::declared_rounding_sigma(member, p, contract));
  }
  if (!*s) raise(s->error());
  return {to_numpy(std::move((*s)->o)), to_numpy(std::move((*s)->final_state))};
}

std::vector<NumpyArray> declared_backward_sigma(
    int member_code, std::array<std::int64_t, 5> dims, std::vector<std::int64_t> cu_seqlens,
    std::optional<HostArray> q, std::optional<HostArray> k, std::optional<HostArray> v,
    std::optional<HostArray> g, std::optional<HostArray> beta, std::optional<HostArray> h0,
    double scale, bool v_first, std::optional<HostArray> d_o,
    std::optional<HostArray> d_final_state, const std::string& grade) {
  const Member member = member_of(member_code);
  const kcv::glr::Problem p =
      make_problem(member, dims, std::move(cu_seqlens), q, k, v, g, beta, h0, scale, v_first);
  const kcv::glr::Cotangents cot{to_vector(d_o), to_vector(d_final_state)};
  const kcv::glr::PrecisionContract contract = kcv::glr::contract_for(grade_of(grade));
  std::optional<kcv::Expected<kcv::glr::BackwardSigma>> s;
  {
    nb::gil_scoped_release release;
    s.emplace(kcv::glr::declared_backward_sigma(member, p, cot, contract));
  }
  if (!*s) raise(s->error());
  kcv::glr::BackwardSigma& t = s->value();
  std::vector<NumpyArray> out;
  for (std::vector<double>* x : {&t.dq, &t.dk, &t.dv, &t.dg, &t.dbeta, &t.dh0})
    out.push_back(to_numpy(std::move(*x)));
  return out;
}

std::pair<NumpyArray, NumpyArray> forward_bounds(
    int member_code, std::array<std::int64_t, 5> dims, std::vector<std::int64_t> cu_seqlens,
    std::optional<HostArray> q, std::optional<HostArray> k, std::optional<HostArray> v,
    std::optional<HostArray> g, std::optional<HostArray> beta, std::optional<HostArray> h0,
    double scale, bool v_first, const std::string& grade) {
  const Member member = member_of(member_code);
  const kcv::glr::Problem p =
      make_problem(member, dims, std::move(cu_seqlens), q, k, v, g, beta, h0, scale, v_first);
  const kcv::glr::PrecisionContract contract = kcv::glr::contract_for(grade_of(grade));
  std::optional<kcv::Expected<kcv::glr::ForwardBounds>> b;
  {
    nb::gil_scoped_release release;
    kcv::Expected<kcv::glr::Outputs> ref = kcv::glr::chunked_forward(member, p);
    if (!ref)
      b.emplace(ref.error());
    else
      b.emplace(kcv::glr::forward_bounds(member, p, *ref, contract));
  }
  if (!*b) raise(b->error());
  return {to_numpy(std::move((*b)->o)), to_numpy(std::move((*b)->final_state))};
}

std::vector<NumpyArray> backward_bounds(int member_code, std::array<std::int64_t, 5> dims,
                                        std::vector<std::int64_t> cu_seqlens,
                                        std::optional<HostArray> q, std::optional<HostArray> k,
                                        std::optional<HostArray> v, std::optional<HostArray> g,
                                        std::optional<HostArray> beta, std::optional<HostArray> h0,
                                        double scale, bool v_first, std::optional<HostArray> d_o,
                                        std::optional<HostArray> d_final_state,
                                        const std::string& grade) {
  const Member member = member_of(member_code);
  const kcv::glr::Problem p =
      make_problem(member, dims, std::move(cu_seqlens), q, k, v, g, beta, h0, scale, v_first);
  kcv::glr::Cotangents cot{to_vector(d_o), to_vector(d_final_state)};
  if (auto st = kcv::glr::validate(p, cot); !st) raise(st.error());
  const kcv::glr::PrecisionContract contract = kcv::glr::contract_for(grade_of(grade));
  std::optional<kcv::Expected<kcv::glr::BackwardBounds>> b;
  {
    nb::gil_scoped_release release;
    kcv::Expected<kcv::glr::Gradients> ref = kcv::glr::chunked_backward(member, p, cot);
    if (!ref)
      b.emplace(ref.error());
    else
      b.emplace(kcv::glr::backward_bounds(member, p, cot, *ref, contract));
  }
  if (!*b) raise(b->error());
  kcv::glr::BackwardBounds& t = b->value();
  std::vector<NumpyArray> out;
  for (std::vector<double>* x : {&t.dq, &t.dk, &t.dv, &t.dg, &t.dbeta, &t.dh0})
    out.push_back(to_numpy(std::move(*x)));
  return out;
}

}  // namespace

void bind_error_model(nb::module_& m) {
  m.attr("CONFIDENCE") = kcv::glr::kConfidence;
  m.attr("UNIT_FP32") = kcv::glr::kUnitFp32;
  m.def("model_scale", &model_scale, nb::arg("dims"), nb::arg("cu_seqlens"), nb::arg("g").none(),
        "(N, G) of the fp32 term; dims = (tokens, H, HV, K, V).");
  m.def(
      "describe_model",
      [](std::int64_t depth, double log_decay) {
        return kcv::glr::describe({depth, log_decay});
      },
      nb::arg("N"), nb::arg("G"));
  m.def(
      "output_unit_roundoff",
      [](const std::string& output) { return kcv::glr::output_unit_roundoff(output_of(output)); },
      nb::arg("output"));
  m.def("tau", &tau, nb::arg("output"), nb::arg("ref"), nb::arg("dims"), nb::arg("cu_seqlens"),
        nb::arg("gate_width"), nb::arg("N"), nb::arg("G"), nb::arg("terms").none() = nb::none(),
        nb::arg("sigma").none() = nb::none(),
        "tau of every element of one output (flat, in the layouts of problem.hpp).");
  m.def("dg_terms", &dg_terms, nb::arg("member"), nb::arg("dims"), nb::arg("cu_seqlens"),
        nb::arg("q").none(), nb::arg("k").none(), nb::arg("v").none(), nb::arg("g").none(),
        nb::arg("beta").none(), nb::arg("h0").none(), nb::arg("scale"), nb::arg("v_first"),
        nb::arg("d_o").none(), nb::arg("d_final_state").none(),
        "(||p||_2 + |sum p|, sum p) over the chunk-form terms of every dg element.");
  m.def("declared_sigma", &declared_sigma, nb::arg("member"), nb::arg("dims"),
        nb::arg("cu_seqlens"), nb::arg("q").none(), nb::arg("k").none(), nb::arg("v").none(),
        nb::arg("g").none(), nb::arg("beta").none(), nb::arg("h0").none(), nb::arg("scale"),
        nb::arg("v_first"), nb::arg("grade"),
        "sigma of o and of the final state under a grade's declared roundings.");
  m.def("declared_backward_sigma", &declared_backward_sigma, nb::arg("member"), nb::arg("dims"),
        nb::arg("cu_seqlens"), nb::arg("q").none(), nb::arg("k").none(), nb::arg("v").none(),
        nb::arg("g").none(), nb::arg("beta").none(), nb::arg("h0").none(), nb::arg("scale"),
        nb::arg("v_first"), nb::arg("d_o").none(), nb::arg("d_final_state").none(),
        nb::arg("grade"),
        "[sigma of dq, dk, dv, dg, dbeta, dh0] under a grade's declared roundings (la, ssd, "
        "deltanet, gdn; ValueError for the per-channel gates); empty where absent.");
  m.def("forward_bounds", &forward_bounds, nb::arg("member"), nb::arg("dims"),
        nb::arg("cu_seqlens"), nb::arg("q").none(), nb::arg("k").none(), nb::arg("v").none(),
        nb::arg("g").none(), nb::arg("beta").none(), nb::arg("h0").none(), nb::arg("scale"),
        nb::arg("v_first"), nb::arg("grade"),
        "(tau of o, tau of the final state) under a grade, against the fp64 chunked reference.");
  m.def("backward_bounds", &backward_bounds, nb::arg("member"), nb::arg("dims"),
        nb::arg("cu_seqlens"), nb::arg("q").none(), nb::arg("k").none(), nb::arg("v").none(),
        nb::arg("g").none(), nb::arg("beta").none(), nb::arg("h0").none(), nb::arg("scale"),
        nb::arg("v_first"), nb::arg("d_o").none(), nb::arg("d_final_state").none(),
        nb::arg("grade"),
        "[tau of dq, dk, dv, dg, dbeta, dh0] under a grade (la, ssd, deltanet, gdn), against the "
        "fp64 chunked reference; empty where absent.");
}

}  // namespace kcv_python_glr
