// File: python/src/glr_common.hpp
// What the kcv._glr binding files share: numpy arrays in and out of C++ vectors, member codes,
// C++ errors as Python exceptions (ValueError for bad arguments, RuntimeError otherwise), and the
// fp64 Problem built from flat float64 arrays (dims = (tokens, H, HV, K, V), batch 1, sequences
// packed along T; an empty cu_seqlens is one sequence).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kcv/expected.hpp"
#include "kcv/glr/member.hpp"
#include "kcv/glr/problem.hpp"

namespace kcv_python_glr {

namespace nb = nanobind;

using kcv::glr::Member;
using HostArray = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using NumpyArray = nb::ndarray<nb::numpy, double, nb::ndim<1>>;

[[noreturn]] inline void raise(const kcv::Error& e) {
  if (e.code == kcv::ErrorCode::kInvalidArgument) throw std::invalid_argument(e.to_string());
  throw std::runtime_error(e.to_string());
}

inline Member member_of(int code) {
  if (code < 0 || code >= static_cast<int>(kcv::glr::kAllMembers.size()))
    throw std::invalid_argument("member: unknown member code " + std::to_string(code));
  return static_cast<Member>(code);
}

inline std::vector<double> to_vector(const std::optional<HostArray>& a) {
  if (!a) return {};
  return std::vector<double>(a->data(), a->data() + a->size());
}

inline NumpyArray to_numpy(std::vector<double>&& v) {
  auto* heap = new std::vector<double>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  return NumpyArray(heap->data(), {heap->size()}, owner);
}

/// dims = (tokens, H, HV, K, V); cu_seqlens empty = one sequence.
inline kcv::glr::Problem make_problem(
    Member member, const std::array<std::int64_t, 5>& dims, std::vector<std::int64_t> cu_seqlens,
    const std::optional<HostArray>& q, const std::optional<HostArray>& k,
    const std::optional<HostArray>& v, const std::optional<HostArray>& g,
    const std::optional<HostArray>& beta, const std::optional<HostArray>& h0, double scale,
    bool v_first) {
  kcv::glr::Problem p;
  p.shape.tokens = dims[0];
  p.shape.qk_heads = dims[1];
  p.shape.v_heads = dims[2];
  p.shape.key_dim = dims[3];
  p.shape.value_dim = dims[4];
  p.shape.cu_seqlens = std::move(cu_seqlens);
  p.q = to_vector(q);
  p.k = to_vector(k);
  p.v = to_vector(v);
  p.g = to_vector(g);
  p.beta = to_vector(beta);
  p.h0 = to_vector(h0);
  p.scale = scale;
  p.layout = v_first ? kcv::glr::StateLayout::kVK : kcv::glr::StateLayout::kKV;
  if (auto st = kcv::glr::validate(member, p); !st) raise(st.error());
  return p;
}

/// Binds the GLR error model (glr_error_model.cpp).
void bind_error_model(nb::module_& m);

}  // namespace kcv_python_glr
