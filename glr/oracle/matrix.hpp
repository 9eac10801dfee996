// File: glr/oracle/matrix.hpp
// A small dense row-major fp64 matrix and the four products the GLR references need. Every element
// of a product is the textbook sum from 0 in the order of the contracted index, one product and
// one addition at a time, so an fp64 reader can check it line by line (matrix.cpp keeps that
// order while it reuses loads).
#pragma once

#include <cstdint>
#include <vector>

namespace kcv::glr::detail {

class Matrix {
 public:
  Matrix() = default;
  Matrix(std::int64_t rows, std::int64_t cols)
      : rows_(rows), cols_(cols), a_(static_cast<std::size_t>(rows * cols), 0.0) {}

  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  double& operator()(std::int64_t i, std::int64_t j) {
    return a_[static_cast<std::size_t>(i * cols_ + j)];
  }
  double operator()(std::int64_t i, std::int64_t j) const {
    return a_[static_cast<std::size_t>(i * cols_ + j)];
  }
  double* row(std::int64_t i) { return a_.data() + i * cols_; }
  const double* row(std::int64_t i) const { return a_.data() + i * cols_; }

 private:
  std::int64_t rows_ = 0;
  std::int64_t cols_ = 0;
  std::vector<double> a_;
};

Matrix matmul(const Matrix& a, const Matrix& b);     ///< a·b
Matrix matmul_tn(const Matrix& a, const Matrix& b);  ///< aᵀ·b
Matrix matmul_nt(const Matrix& a, const Matrix& b);  ///< a·bᵀ
Matrix transpose(const Matrix& a);
/// y += alpha·x (same shape).
void axpy(double alpha, const Matrix& x, Matrix& y);
/// Keeps the entries strictly below the diagonal, zeroes the rest.
Matrix strict_lower(Matrix a);
/// Keeps the entries on and below the diagonal, zeroes the rest.
Matrix lower_inclusive(Matrix a);
/// Multiplies row i by s[i].
Matrix scale_rows(Matrix a, const std::vector<double>& s);

}  // namespace kcv::glr::detail
