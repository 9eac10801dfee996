// File: src/oracle/mpfr_exact.cpp
// MPFR wrappers for the escalation tier. Every operation rounds to nearest at kWorkPrec; sums go
// through mpfr_sum, which is correctly rounded however the terms cancel (MPFR >= 4.0).
#include "oracle/mpfr_exact.hpp"

namespace kcv::oracle {

Mp::Mp(double x, mpfr_prec_t prec) {
  mpfr_init2(v_, prec);
  mpfr_set_d(v_, x, MPFR_RNDN);
}

Mp::Mp(const Mp& other) {
  mpfr_init2(v_, mpfr_get_prec(other.v_));
  mpfr_set(v_, other.v_, MPFR_RNDN);
}

Mp& Mp::operator=(const Mp& other) {
  if (this != &other) {
    mpfr_set_prec(v_, mpfr_get_prec(other.v_));
    mpfr_set(v_, other.v_, MPFR_RNDN);
  }
  return *this;
}

Mp::~Mp() { mpfr_clear(v_); }

double Mp::to_double() const { return mpfr_get_d(v_, MPFR_RNDN); }

namespace {

/// Correctly rounded sum of `terms` at `prec` bits.
Mp sum_of(std::vector<Mp>& terms, mpfr_prec_t prec = kWorkPrec) {
  std::vector<mpfr_ptr> ptrs;
  ptrs.reserve(terms.size());
  for (Mp& t : terms) ptrs.push_back(t.get());
  Mp out(0.0, prec);
  mpfr_sum(out.get(), ptrs.data(), ptrs.size(), MPFR_RNDN);
  return out;
}

std::vector<Mp> exact_terms(std::span<const double> xs) {
  std::vector<Mp> terms;
  terms.reserve(xs.size());
  for (double x : xs) terms.emplace_back(x, 53);
  return terms;
}

std::vector<Mp> exact_products(std::span<const double> a, std::span<const double> b) {
  std::vector<Mp> terms;
  terms.reserve(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    Mp p(a[i], 106);  // 53 + 53 bits: the product of two doubles is exact
    mpfr_mul_d(p.get(), p.get(), b[i], MPFR_RNDN);
    terms.push_back(p);
  }
  return terms;
}

template <typename F>
Mp unary(const Mp& a, F f) {
  Mp out;
  f(out.get(), a.get(), MPFR_RNDN);
  return out;
}

template <typename F>
Mp binary(const Mp& a, const Mp& b, F f) {
  Mp out;
  f(out.get(), a.get(), b.get(), MPFR_RNDN);
  return out;
}

}  // namespace

Mp mp_sum(std::span<const double> xs) {
  std::vector<Mp> terms = exact_terms(xs);
  return sum_of(terms);
}

Mp mp_sum(const std::vector<Mp>& xs) {
  std::vector<Mp> copy = xs;
  return sum_of(copy);
}

Mp mp_dot(std::span<const double> a, std::span<const double> b) {
  std::vector<Mp> terms = exact_products(a, b);
  return sum_of(terms);
}

Mp mp_add(const Mp& a, const Mp& b) { return binary(a, b, mpfr_add); }
Mp mp_sub(const Mp& a, const Mp& b) { return binary(a, b, mpfr_sub); }
Mp mp_mul(const Mp& a, const Mp& b) { return binary(a, b, mpfr_mul); }
Mp mp_div(const Mp& a, const Mp& b) { return binary(a, b, mpfr_div); }
Mp mp_sqrt(const Mp& a) { return unary(a, mpfr_sqrt); }
Mp mp_exp(const Mp& a) { return unary(a, mpfr_exp); }
Mp mp_log(const Mp& a) { return unary(a, mpfr_log); }
Mp mp_erfc(const Mp& a) { return unary(a, mpfr_erfc); }
Mp mp_tanh(const Mp& a) { return unary(a, mpfr_tanh); }

double exact_sum(std::span<const double> xs) {
  std::vector<Mp> terms = exact_terms(xs);
  return sum_of(terms, 53).to_double();
}

double exact_dot(std::span<const double> a, std::span<const double> b) {
  std::vector<Mp> terms = exact_products(a, b);
  return sum_of(terms, 53).to_double();
}

}  // namespace kcv::oracle
