// File: glr/oracle/matrix.cpp
// The dense products of matrix.hpp. Every element is the textbook sum c(i, j) = Σ_p a(i, p)·b(p, j)
// from 0 in the order of p, one product and one addition at a time; the loops run i-k-j so the
// inner loop is contiguous, and add four terms to a loaded c(i, j) before storing it (the same
// additions in the same order, a quarter of the loads and stores). Sizes are checked by the
// callers' construction; a mismatch is a bug in kcv::glr.
#include "glr/oracle/matrix.hpp"

#include <cassert>

namespace kcv::glr::detail {

namespace {

// Row i of c += Σ_p coef(p)·b(p, ·) over p in [0, depth), in the order of p: c_row[j] takes
// coef(p)·b(p, j) for p = 0, 1, 2, ... one at a time.
template <typename Coef>
void add_row_products(double* c_row, const Matrix& b, std::int64_t depth, Coef coef) {
  const std::int64_t n = b.cols();
  std::int64_t p = 0;
  for (; p + 4 <= depth; p += 4) {
    const double a0 = coef(p), a1 = coef(p + 1), a2 = coef(p + 2), a3 = coef(p + 3);
    const double* __restrict b0 = b.row(p);
    const double* __restrict b1 = b.row(p + 1);
    const double* __restrict b2 = b.row(p + 2);
    const double* __restrict b3 = b.row(p + 3);
    double* __restrict cr = c_row;
    for (std::int64_t j = 0; j < n; ++j) {
      double x = cr[j];
      x += a0 * b0[j];
      x += a1 * b1[j];
      x += a2 * b2[j];
      x += a3 * b3[j];
      cr[j] = x;
    }
  }
  for (; p < depth; ++p) {
    const double ap = coef(p);
    const double* br = b.row(p);
    for (std::int64_t j = 0; j < n; ++j) c_row[j] += ap * br[j];
  }
}

}  // namespace

Matrix matmul(const Matrix& a, const Matrix& b) {
  assert(a.cols() == b.rows());
  Matrix c(a.rows(), b.cols());
  for (std::int64_t i = 0; i < a.rows(); ++i)
    add_row_products(c.row(i), b, a.cols(), [&](std::int64_t p) { return a(i, p); });
  return c;
}

Matrix matmul_tn(const Matrix& a, const Matrix& b) {
  assert(a.rows() == b.rows());
  Matrix c(a.cols(), b.cols());
  for (std::int64_t i = 0; i < a.cols(); ++i)
    add_row_products(c.row(i), b, a.rows(), [&](std::int64_t p) { return a(p, i); });
  return c;
}

// a·bᵀ as a·(bᵀ): every c(i, j) is the same sum, from 0 in the order of p, as the dot product of
// row i of a and row j of b; the i-k-j loops over bᵀ keep the inner loop contiguous and the sums
// independent (a dot product's single running sum waits on each addition in turn).
Matrix matmul_nt(const Matrix& a, const Matrix& b) {
  assert(a.cols() == b.cols());
  return matmul(a, transpose(b));
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
