// File: glr/oracle/matrix.cpp
// Textbook loops for the dense products of matrix.hpp (i-k-j order so the inner loop is
// contiguous). Sizes are checked by the callers' construction; a mismatch is a bug in kcv::glr.
#include "glr/oracle/matrix.hpp"

#include <cassert>

namespace kcv::glr::detail {

Matrix matmul(const Matrix& a, const Matrix& b) {
  assert(a.cols() == b.rows());
  Matrix c(a.rows(), b.cols());
  for (std::int64_t i = 0; i < a.rows(); ++i) {
    for (std::int64_t p = 0; p < a.cols(); ++p) {
      const double aip = a(i, p);
      for (std::int64_t j = 0; j < b.cols(); ++j) c(i, j) += aip * b(p, j);
    }
  }
  return c;
}

Matrix matmul_tn(const Matrix& a, const Matrix& b) {
  assert(a.rows() == b.rows());
  Matrix c(a.cols(), b.cols());
  for (std::int64_t p = 0; p < a.rows(); ++p) {
    for (std::int64_t i = 0; i < a.cols(); ++i) {
      const double api = a(p, i);
      for (std::int64_t j = 0; j < b.cols(); ++j) c(i, j) += api * b(p, j);
    }
  }
  return c;
}

Matrix matmul_nt(const Matrix& a, const Matrix& b) {
  assert(a.cols() == b.cols());
  Matrix c(a.rows(), b.rows());
  for (std::int64_t i = 0; i < a.rows(); ++i) {
    for (std::int64_t j = 0; j < b.rows(); ++j) {
      double s = 0.0;
      for (std::int64_t p = 0; p < a.cols(); ++p) s += a(i, p) * b(j, p);
      c(i, j) = s;
    }
  }
  return c;
}

Matrix transpose(const Matrix& a) {
  Matrix t(a.cols(), a.rows());
  for (std::int64_t i = 0; i < a.rows(); ++i)
    for (std::int64_t j = 0; j < a.cols(); ++j) t(j, i) = a(i, j);
  return t;
}

void axpy(double alpha, const Matrix& x, Matrix& y) {
  assert(x.rows() == y.rows() && x.cols() == y.cols());
  for (std::int64_t i = 0; i < x.rows(); ++i)
    for (std::int64_t j = 0; j < x.cols(); ++j) y(i, j) += alpha * x(i, j);
}

Matrix strict_lower(Matrix a) {
  for (std::int64_t i = 0; i < a.rows(); ++i)
    for (std::int64_t j = i; j < a.cols(); ++j) a(i, j) = 0.0;
  return a;
}

Matrix lower_inclusive(Matrix a) {
  for (std::int64_t i = 0; i < a.rows(); ++i)
    for (std::int64_t j = i + 1; j < a.cols(); ++j) a(i, j) = 0.0;
  return a;
}

Matrix scale_rows(Matrix a, const std::vector<double>& s) {
  assert(static_cast<std::int64_t>(s.size()) == a.rows());
  for (std::int64_t i = 0; i < a.rows(); ++i)
    for (std::int64_t j = 0; j < a.cols(); ++j) a(i, j) *= s[static_cast<std::size_t>(i)];
  return a;
}

}  // namespace kcv::glr::detail
