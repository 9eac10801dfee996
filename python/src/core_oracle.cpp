// File: python/src/core_oracle.cpp
// Oracle entry dicts -> OracleResult, and the kcv._core.Oracle class that keeps one. An entry
// gives tau per element, or tau_rel with tau_abs or tau_abs_steps (the audit's error model),
// expanded here; `declared` and `n_terms` are optional. Conversions run without the GIL.
#include "core_oracle.hpp"

#include <fmt/format.h>
#include <nanobind/stl/tuple.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kcv::py {
namespace {

constexpr int kZeroExponent = -1100;  // error_model.ZERO_EXPONENT

/// A contiguous float64 or float32 array is read in place (ascontiguousarray returns it itself)
/// and widened here; anything else is converted by numpy first. float32 is read as it is because
/// `declared`, the eager fp32 run, would otherwise cost a float64 temporary from numpy per judge
/// call besides this copy. The copy runs without the GIL (`a` keeps the buffer alive): it is
/// hundreds of megabytes for the audit's large outputs, and other slots wait on the GIL.
std::vector<double> f64_values(nb::handle values) {
  nb::object np = nb::module_::import_("numpy");
  nb::object a = np.attr("asarray")(values);
  const bool f32 = nb::cast<std::string>(a.attr("dtype").attr("str")) == "<f4";
  a = np.attr("ascontiguousarray")(a, f32 ? "float32" : "float64").attr("ravel")();
  nb::dict iface = nb::cast<nb::dict>(a.attr("__array_interface__"));
  const auto n = nb::cast<std::size_t>(a.attr("size"));
  const auto data = nb::cast<uintptr_t>(nb::cast<nb::tuple>(iface["data"])[0]);
  nb::gil_scoped_release unlocked;
  if (n == 0) return {};
  if (f32) {
    const auto* p = reinterpret_cast<const float*>(data);
    return std::vector<double>(p, p + n);  // float -> double is exact
  }
  const auto* p = reinterpret_cast<const double*>(data);
  return std::vector<double>(p, p + n);
}

/// tau = tau_rel |y*| + the absolute term of y*'s binade, 0 where y* is not finite (the audit's
/// banded error scale, kcv.audit.error_model.band_steps): `steps` is a list of (frexp exponent,
/// absolute term) pairs with increasing exponents; an element takes the first step whose exponent
/// is at least its own (y* = 0 counts as below every binade), the last step above them all.
std::vector<double> banded_tau(const std::vector<double>& value, double rel, nb::handle steps,
                               const std::string& what) {
  std::vector<std::pair<int, double>> table;
  for (nb::handle item : steps) {
    const auto [e, a] = nb::cast<std::tuple<int, double>>(item);
    if (!table.empty() && e <= table.back().first)
      raise_invalid(fmt::format("{}.tau_abs_steps: exponents must increase", what));
    table.emplace_back(e, a);
  }
  nb::gil_scoped_release unlocked;
  std::vector<double> tau(value.size(), 0.0);
  if (table.empty()) {
    for (std::size_t i = 0; i < value.size(); ++i)
      if (std::isfinite(value[i])) tau[i] = rel * std::fabs(value[i]);
    return tau;
  }
  // A dense lookup from exponent to term over the steps' range (at most ~2100 binades).
  const int lo = table.front().first, hi = table.back().first;
  std::vector<double> dense(static_cast<std::size_t>(hi - lo + 1));
  std::size_t j = 0;
  for (int e = lo; e <= hi; ++e) {
    while (table[j].first < e) ++j;
    dense[static_cast<std::size_t>(e - lo)] = table[j].second;
  }
  for (std::size_t i = 0; i < value.size(); ++i) {
    const double y = value[i];
    if (!std::isfinite(y)) continue;
    int e = kZeroExponent;
    if (y != 0) std::frexp(y, &e);
    const double a = e <= lo   ? table.front().second
                     : e >= hi ? table.back().second
                               : dense[static_cast<std::size_t>(e - lo)];
    tau[i] = rel * std::fabs(y) + a;
  }
  return tau;
}

OracleResult oracle_from(nb::handle entries) {
  OracleResult r;
  std::size_t o = 0;
  for (nb::handle item : entries) {
    const std::string what = fmt::format("oracle[{}]", o++);
    nb::dict d = nb::cast<nb::dict>(item);
    for (const char* key : {"dtype", "shape", "value"})
      if (!d.contains(key)) raise_invalid(fmt::format("{}: no \"{}\"", what, key));
    const bool affine =
        d.contains("tau_rel") && (d.contains("tau_abs") || d.contains("tau_abs_steps"));
    if (!d.contains("tau") && !affine)
      raise_invalid(
          fmt::format("{}: no \"tau\" (nor \"tau_rel\" with \"tau_abs\" or "
                      "\"tau_abs_steps\")",
                      what));
    OracleOutput out;
    out.dtype = dtype_from_string(nb::cast<std::string>(d["dtype"]), what + ".dtype");
    for (nb::handle s : d["shape"]) out.shape.push_back(nb::cast<int64_t>(s));
    out.value = f64_values(d["value"]);
    if (d.contains("tau")) {
      out.tau = f64_values(d["tau"]);
    } else if (d.contains("tau_abs_steps") && d.contains("tau_rel")) {
      out.tau = banded_tau(out.value, nb::cast<double>(d["tau_rel"]), d["tau_abs_steps"], what);
    } else {
      // tau = tau_rel |y*| + tau_abs, 0 where y* is not finite: built here so the caller keeps
      // no per-element tau array for every probe (the audit's host memory).
      const double rel = nb::cast<double>(d["tau_rel"]);
      const double abs = nb::cast<double>(d["tau_abs"]);
      nb::gil_scoped_release unlocked;
      out.tau.reserve(out.value.size());
      for (double y : out.value)
        out.tau.push_back(std::isfinite(y) ? rel * std::fabs(y) + abs : 0.0);
    }
    if (d.contains("declared") && !d["declared"].is_none())
      out.declared = f64_values(d["declared"]);
    if (d.contains("n_terms") && !d["n_terms"].is_none()) out.n_terms = f64_values(d["n_terms"]);
    r.outputs.push_back(std::move(out));
  }
  return r;
}

}  // namespace

const OracleResult& oracle_of(nb::handle oracle, OracleResult& scratch) {
  if (nb::isinstance<PreparedOracle>(oracle)) return nb::cast<const PreparedOracle&>(oracle).result;
  scratch = oracle_from(oracle);
  return scratch;
}

void bind_oracle(nb::module_& m) {
  nb::class_<PreparedOracle>(m, "Oracle",
                             "A probe's oracle entries converted once for the judges (judge's "
                             "`oracle` takes it in place of the list of entries).")
      .def(
          "__init__",
          [](PreparedOracle* o, nb::handle entries) {
            new (o) PreparedOracle{oracle_from(entries)};
          },
          nb::arg("entries"),
          "Converts a list of oracle entry dicts (see judge) once: values widened to fp64, tau "
          "expanded per element.")
      .def_prop_ro(
          "outputs", [](const PreparedOracle& o) { return o.result.outputs.size(); },
          "The number of oracle outputs.");
}

}  // namespace kcv::py
