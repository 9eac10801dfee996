// File: examples/patterns.hpp
// The loop skeletons most bundled kernels share, so that each kernel file shows only its
// arithmetic (and, for the red team, its defect): an elementwise map over one or two inputs,
// a row reduction and a row-to-row map along the last dimension. Every skeleton reads and
// writes by stride, checks shapes, writes each output element exactly once and splits rows
// over call->threads threads (rows are independent, so the result does not depend on it).
#pragma once

#include <vector>

#include "common.hpp"

namespace kcv::examples {

/// out = f(x) elementwise.
template <class F>
int unary_map(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
              const kcv_call* call, F f) {
  if (int rc = check_arity(call, n_in, 1, n_out, 1)) return rc;
  if (!same_shape(in[0], out[0])) return fail(call, "output shape differs from input shape");
  const RowView x(in[0]), y(out[0]);
  parallel_for(requested_threads(call), x.rows(), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t xo = x.row_offset(r), yo = y.row_offset(r);
      for (int64_t c = 0; c < x.cols(); ++c) {
        store(y.tensor(), yo + c * y.col_stride(), f(load(in[0], xo + c * x.col_stride())));
      }
    }
  });
  return 0;
}

/// out = f(x, y) elementwise, x and y of the output's shape (any strides, including 0).
template <class F>
int binary_map(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
               const kcv_call* call, F f) {
  if (int rc = check_arity(call, n_in, 2, n_out, 1)) return rc;
  if (!same_shape(in[0], out[0]) || !same_shape(in[1], out[0])) {
    return fail(call, "input and output shapes differ");
  }
  const RowView a(in[0]), b(in[1]), y(out[0]);
  parallel_for(requested_threads(call), a.rows(), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t ao = a.row_offset(r), bo = b.row_offset(r), yo = y.row_offset(r);
      for (int64_t c = 0; c < a.cols(); ++c) {
        const float v = f(load(in[0], ao + c * a.col_stride()), load(in[1], bo + c * b.col_stride()));
        store(y.tensor(), yo + c * y.col_stride(), v);
      }
    }
  });
  return 0;
}

/// Gathers row r of a view into `row` (fp32).
inline void gather_row(const RowView& v, int64_t r, std::vector<float>& row) {
  row.resize(static_cast<std::size_t>(v.cols()));
  const int64_t o = v.row_offset(r);
  for (int64_t c = 0; c < v.cols(); ++c) row[c] = load(v.tensor(), o + c * v.col_stride());
}

/// Checks that `out` has the input's leading dimensions (one value per row).
inline int check_reduction(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
                           const kcv_call* call) {
  if (int rc = check_arity(call, n_in, 1, n_out, 1)) return rc;
  if (in[0].ndim < 1 || out[0].ndim != in[0].ndim - 1) return fail(call, "output rank must be input rank - 1");
  for (int32_t d = 0; d < out[0].ndim; ++d) {
    if (out[0].shape[d] != in[0].shape[d]) return fail(call, "output shape must drop the last dim");
  }
  return 0;
}

/// Output offset of row r of a reduction output (the output has the input's leading dims).
inline int64_t reduced_offset(const kcv_tensor& out, int64_t r) {
  int64_t off = 0;
  for (int32_t d = out.ndim - 1; d >= 0; --d) {
    off += (r % out.shape[d]) * out.strides[d];
    r /= out.shape[d];
  }
  return off;
}

/// out[r] = f(row r of x, r) along the last dimension; f gets the gathered fp32 row.
template <class F>
int row_reduce(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
               const kcv_call* call, F f) {
  if (int rc = check_reduction(in, n_in, out, n_out, call)) return rc;
  const RowView x(in[0]);
  parallel_for(requested_threads(call), x.rows(), [&](int64_t r0, int64_t r1) {
    std::vector<float> row;
    for (int64_t r = r0; r < r1; ++r) {
      gather_row(x, r, row);
      store(out[0], reduced_offset(out[0], r), f(row));
    }
  });
  return 0;
}

/// Row-to-row map along the last dimension (softmax, cumsum): f(in_row, out_row).
template <class F>
int row_map(const kcv_tensor* in, int32_t n_in, kcv_tensor* out, int32_t n_out,
            const kcv_call* call, F f) {
  if (int rc = check_arity(call, n_in, 1, n_out, 1)) return rc;
  if (!same_shape(in[0], out[0])) return fail(call, "output shape differs from input shape");
  const RowView x(in[0]), y(out[0]);
  parallel_for(requested_threads(call), x.rows(), [&](int64_t r0, int64_t r1) {
    std::vector<float> row, res;
    for (int64_t r = r0; r < r1; ++r) {
      gather_row(x, r, row);
      res.assign(row.size(), 0.0f);
      f(row, res);
      const int64_t yo = y.row_offset(r);
      for (int64_t c = 0; c < y.cols(); ++c) store(out[0], yo + c * y.col_stride(), res[c]);
    }
  });
  return 0;
}

}  // namespace kcv::examples
