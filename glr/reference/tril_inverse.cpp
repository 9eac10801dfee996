// File: glr/reference/tril_inverse.cpp
// Block forward substitution for T = (I + L)^{-1} (see tril_inverse.hpp) and its VJP.
#include "glr/reference/tril_inverse.hpp"

#include <algorithm>

#include "kcv/glr/chunked.hpp"

namespace kcv::glr::detail {
namespace {

struct Block {
  std::int64_t begin;
  std::int64_t size;
};

Block block(std::int64_t r, std::int64_t n) {
  const std::int64_t begin = r * kSubChunk;
  return {begin, std::min(kSubChunk, n - begin)};
}

// Diagonal block r of T by row-wise forward substitution.
void invert_diagonal_block(const Matrix& l, Block br, Matrix& t) {
  Matrix nm(br.size, br.size);  // N = T_rr − I
  for (std::int64_t i = 1; i < br.size; ++i) {
    // a = −L_rr[i, :i];  N[i, :] = a + a·N[:i, :] (rows < i of N are final)
    for (std::int64_t j = 0; j < i; ++j) nm(i, j) = -l(br.begin + i, br.begin + j);
    for (std::int64_t m = 0; m < i; ++m) {
      const double a = -l(br.begin + i, br.begin + m);
      for (std::int64_t j = 0; j < m; ++j) nm(i, j) += a * nm(m, j);
    }
  }
  for (std::int64_t i = 0; i < br.size; ++i) {
    for (std::int64_t j = 0; j < i; ++j) t(br.begin + i, br.begin + j) = nm(i, j);
    t(br.begin + i, br.begin + i) = 1.0;
  }
}

// T_rs = −T_rr · Σ_{m=s}^{r−1} L_rm T_ms.
void fill_off_diagonal_block(const Matrix& l, std::int64_t r, std::int64_t s, Matrix& t) {
  const std::int64_t n = l.rows();
  const Block br = block(r, n);
  const Block bs = block(s, n);
  Matrix acc(br.size, bs.size);
  for (std::int64_t m = s; m < r; ++m) {
    const Block bm = block(m, n);
    for (std::int64_t i = 0; i < br.size; ++i)
      for (std::int64_t p = 0; p < bm.size; ++p) {
        const double lip = l(br.begin + i, bm.begin + p);
        for (std::int64_t j = 0; j < bs.size; ++j) acc(i, j) += lip * t(bm.begin + p, bs.begin + j);
      }
  }
  for (std::int64_t i = 0; i < br.size; ++i)
    for (std::int64_t j = 0; j < bs.size; ++j) {
      double sum = 0.0;
      for (std::int64_t p = 0; p <= i; ++p) sum += t(br.begin + i, br.begin + p) * acc(p, j);
      t(br.begin + i, bs.begin + j) = -sum;
    }
}

}  // namespace

Matrix unit_lower_inverse(const Matrix& l) {
  const std::int64_t n = l.rows();
  const std::int64_t blocks = (n + kSubChunk - 1) / kSubChunk;
  Matrix t(n, n);
  for (std::int64_t r = 0; r < blocks; ++r) invert_diagonal_block(l, block(r, n), t);
  for (std::int64_t r = 1; r < blocks; ++r)
    for (std::int64_t s = 0; s < r; ++s) fill_off_diagonal_block(l, r, s, t);
  return t;
}

Matrix unit_lower_inverse_vjp(const Matrix& t, const Matrix& dt) {
  Matrix tt = transpose(t);
  Matrix dl = matmul(matmul(tt, dt), tt);
  for (std::int64_t i = 0; i < dl.rows(); ++i)
    for (std::int64_t j = 0; j < dl.cols(); ++j) dl(i, j) = j < i ? -dl(i, j) : 0.0;
  return dl;
}

}  // namespace kcv::glr::detail
