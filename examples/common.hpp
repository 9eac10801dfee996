// File: examples/common.hpp
// Small helpers shared by the bundled kernels, written as *user code*: they see only the C ABI
// of kcv_kernel.h, never kcv's internal headers. Conversions to and from the 16-bit formats are
// done on bit patterns with round-to-nearest-even (subnormals kept, NaN stays NaN), so a kernel
// that wants to be wrong (truncation, flushing, low-precision staging) says so explicitly with
// the helpers named for that. Tensors are read and written by stride through RowView, which sees
// any tensor as rows x cols with the last dimension as the row.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string_view>
#include <thread>
#include <vector>

#include <kcv/kcv_kernel.h>

namespace kcv::examples {

// ---------------------------------------------------------------- bits and 16-bit formats

inline uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

inline float float_of(uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

inline bool is_nan_bits(uint32_t b) { return (b & 0x7fffffffu) > 0x7f800000u; }

/// fp32 -> bf16 bits, round to nearest even.
inline uint16_t bf16_bits_rn(float x) {
  uint32_t b = bits_of(x);
  if (is_nan_bits(b)) return static_cast<uint16_t>((b >> 16) | 0x40u);
  b += 0x7fffu + ((b >> 16) & 1u);
  return static_cast<uint16_t>(b >> 16);
}

/// fp32 -> bf16 bits by dropping the low 16 bits (round toward zero). Deliberately wrong.
inline uint16_t bf16_bits_truncated(float x) {
  const uint32_t b = bits_of(x);
  if (is_nan_bits(b)) return static_cast<uint16_t>((b >> 16) | 0x40u);
  return static_cast<uint16_t>(b >> 16);
}

inline float bf16_to_float(uint16_t h) { return float_of(static_cast<uint32_t>(h) << 16); }
inline float round_bf16(float x) { return bf16_to_float(bf16_bits_rn(x)); }

/// fp32 -> IEEE binary16 bits, round to nearest even, subnormals kept, overflow to Inf.
inline uint16_t f16_bits_rn(float x) {
  const uint32_t b = bits_of(x);
  const uint32_t sign = (b >> 16) & 0x8000u;
  const uint32_t abs = b & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: Inf
  const uint32_t exp = abs >> 23;
  if (exp >= 113) {  // normal binary16: |x| >= 2^-14
    uint32_t h = ((exp - 112) << 10) | ((abs & 0x7fffffu) >> 13);
    const uint32_t rem = abs & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  if (exp == 0) return static_cast<uint16_t>(sign);  // fp32 subnormal or zero: below 2^-25
  const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;  // value = mant * 2^(exp-150)
  const uint32_t shift = 126 - exp;                     // in units of 2^-24: mant >> shift
  if (shift > 25) return static_cast<uint16_t>(sign);
  uint32_t h = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

inline float f16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);  // exact
    return sign ? -v : v;
  }
  if (exp == 31) return float_of(sign | 0x7f800000u | (mant << 13));
  return float_of(sign | ((exp + 112) << 23) | (mant << 13));
}

inline float round_f16(float x) { return f16_to_float(f16_bits_rn(x)); }

/// fp32 rounded to TF32 (10 explicit mantissa bits), round to nearest even.
inline float round_tf32(float x) {
  uint32_t b = bits_of(x);
  if ((b & 0x7f800000u) == 0x7f800000u) return x;  // Inf, NaN
  b += 0xfffu + ((b >> 13) & 1u);
  return float_of(b & 0xffffe000u);
}

inline bool is_subnormal(float x) { return x != 0.0f && std::fabs(x) < 1.17549435e-38f; }

/// Flush-to-zero of one value, keeping the sign (what FTZ/DAZ hardware does).
inline float flush_subnormal(float x) { return is_subnormal(x) ? std::copysign(0.0f, x) : x; }

// ---------------------------------------------------------------- strided element access

inline int64_t dtype_bytes(int32_t dtype) {
  switch (dtype) {
    case KCV_F64: case KCV_I64: return 8;
    case KCV_F32: case KCV_I32: return 4;
    case KCV_F16: case KCV_BF16: return 2;
    default: return 1;
  }
}

inline bool is_float_dtype(int32_t dtype) {
  return dtype == KCV_F32 || dtype == KCV_F16 || dtype == KCV_BF16 || dtype == KCV_F64;
}

/// Element at `offset` elements from data, as fp32 (fp64 inputs are rounded).
inline float load(const kcv_tensor& t, int64_t offset) {
  const char* p = static_cast<const char*>(t.data) + offset * dtype_bytes(t.dtype);
  switch (t.dtype) {
    case KCV_F32: { float v; std::memcpy(&v, p, 4); return v; }
    case KCV_F16: { uint16_t h; std::memcpy(&h, p, 2); return f16_to_float(h); }
    case KCV_BF16: { uint16_t h; std::memcpy(&h, p, 2); return bf16_to_float(h); }
    case KCV_F64: { double v; std::memcpy(&v, p, 8); return static_cast<float>(v); }
    default: return 0.0f;
  }
}

/// Stores an fp32 value, converting RN-even to the tensor's dtype.
inline void store(const kcv_tensor& t, int64_t offset, float v) {
  char* p = static_cast<char*>(t.data) + offset * dtype_bytes(t.dtype);
  switch (t.dtype) {
    case KCV_F32: std::memcpy(p, &v, 4); break;
    case KCV_F16: { const uint16_t h = f16_bits_rn(v); std::memcpy(p, &h, 2); break; }
    case KCV_BF16: { const uint16_t h = bf16_bits_rn(v); std::memcpy(p, &h, 2); break; }
    case KCV_F64: { const double d = v; std::memcpy(p, &d, 8); break; }
    default: break;
  }
}

/// Stores raw 16-bit bits into a 16-bit tensor (for kernels that do their own conversion).
inline void store_bits16(const kcv_tensor& t, int64_t offset, uint16_t h) {
  std::memcpy(static_cast<char*>(t.data) + offset * 2, &h, 2);
}

inline void store_index(const kcv_tensor& t, int64_t offset, int64_t v) {
  char* p = static_cast<char*>(t.data) + offset * dtype_bytes(t.dtype);
  if (t.dtype == KCV_I32) {
    const int32_t w = static_cast<int32_t>(v);
    std::memcpy(p, &w, 4);
  } else {
    std::memcpy(p, &v, 8);
  }
}

/// A tensor seen as rows x cols: the last dimension is the row, all leading dimensions are
/// flattened (row-major) into the row index. Offsets follow the tensor's strides exactly.
class RowView {
 public:
  explicit RowView(const kcv_tensor& t) : t_(&t) {
    const int32_t nd = t.ndim;
    cols_ = nd >= 1 ? t.shape[nd - 1] : 1;
    col_stride_ = nd >= 1 ? t.strides[nd - 1] : 0;
    rows_ = 1;
    for (int32_t d = 0; d + 1 < nd; ++d) rows_ *= t.shape[d];
  }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t col_stride() const { return col_stride_; }
  /// Offset (elements) of element (r, 0).
  int64_t row_offset(int64_t r) const {
    int64_t off = 0;
    for (int32_t d = t_->ndim - 2; d >= 0; --d) {
      const int64_t n = t_->shape[d];
      off += (r % n) * t_->strides[d];
      r /= n;
    }
    return off;
  }
  int64_t offset(int64_t r, int64_t c) const { return row_offset(r) + c * col_stride_; }
  float at(int64_t r, int64_t c) const { return load(*t_, offset(r, c)); }
  void set(int64_t r, int64_t c, float v) const { store(*t_, offset(r, c), v); }
  const kcv_tensor& tensor() const { return *t_; }

 private:
  const kcv_tensor* t_;
  int64_t rows_ = 1;
  int64_t cols_ = 1;
  int64_t col_stride_ = 0;
};

inline int64_t numel(const kcv_tensor& t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

inline bool same_shape(const kcv_tensor& a, const kcv_tensor& b) {
  if (a.ndim != b.ndim) return false;
  for (int32_t d = 0; d < a.ndim; ++d) {
    if (a.shape[d] != b.shape[d]) return false;
  }
  return true;
}

/// True when the tensor is laid out row-major without gaps (stride-1 last dim, dense rows).
inline bool is_contiguous(const kcv_tensor& t) {
  int64_t expected = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

// ---------------------------------------------------------------- calls, params, errors

/// Writes a message for kcv and returns the failure status 1.
inline int fail(const kcv_call* call, std::string_view msg) {
  if (call != nullptr && call->error != nullptr && call->error_capacity > 0) {
    const std::size_t n = std::min<std::size_t>(msg.size(), call->error_capacity - 1);
    std::memcpy(call->error, msg.data(), n);
    call->error[n] = '\0';
  }
  return 1;
}

/// An op parameter by name (kcv passes all of the op's params, defaults merged).
inline double param(const kcv_call* call, std::string_view name, double fallback) {
  if (call == nullptr) return fallback;
  for (int32_t i = 0; i < call->n_params; ++i) {
    if (name == call->param_names[i]) return call->param_values[i];
  }
  return fallback;
}

inline int requested_threads(const kcv_call* call) {
  if (call == nullptr || call->threads <= 1) return 1;
  return call->threads > 64 ? 64 : call->threads;
}

inline int requested_block(const kcv_call* call, int fallback) {
  return (call == nullptr || call->block <= 0) ? fallback : call->block;
}

/// Runs f(begin, end) over [0, n) split into `threads` contiguous chunks.
template <class F>
void parallel_for(int threads, int64_t n, F&& f) {
  if (threads <= 1 || n < 2) {
    f(int64_t{0}, n);
    return;
  }
  const int64_t chunks = std::min<int64_t>(threads, n);
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(chunks));
  for (int64_t t = 0; t < chunks; ++t) {
    pool.emplace_back([&, t] { f(n * t / chunks, n * (t + 1) / chunks); });
  }
  for (auto& th : pool) th.join();
}

/// Calls body() and turns an escaping exception into a kernel failure (the C ABI must not
/// unwind into kcv).
template <class F>
int guarded(const kcv_call* call, F&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return fail(call, e.what());
  } catch (...) {
    return fail(call, "unknown exception");
  }
}

/// Argument checks shared by the kernels: counts, rank, floating dtypes.
inline int check_arity(const kcv_call* call, int32_t n_in, int32_t want_in, int32_t n_out,
                       int32_t want_out) {
  if (n_in != want_in) return fail(call, "wrong number of inputs");
  if (n_out != want_out) return fail(call, "wrong number of outputs");
  return 0;
}

}  // namespace kcv::examples
