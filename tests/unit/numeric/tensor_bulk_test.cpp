// File: tests/unit/numeric/tensor_bulk_test.cpp
// The bulk HostTensor operations (to_f64, assign_f64, assign_values_of, copy_elements_from,
// contiguous, make_tensor) pinned to the per-element semantics they replace: decode() and
// encode() of every element, bit for bit, for every special class of each format (zeros of both
// signs, subnormals, the normal range's edges, RN-even ties, overflow, infinities, quiet and
// signaling NaNs with payloads), for dense, strided, offset, padded and broadcast views, and
// with the FPU's FTZ/DAZ modes set.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kcv/rng.hpp"
#include "kcv/tensor.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define KCV_TEST_MXCSR 1
#endif

namespace kcv {
namespace {

uint64_t dbits(double x) { return std::bit_cast<uint64_t>(x); }

// Every 16-bit pattern, or a structured set of fp32 patterns: each exponent field with mantissas
// at the edges, around the quiet bit and random, both signs; plus random patterns.
std::vector<uint64_t> patterns(DType t) {
  std::vector<uint64_t> out;
  if (dtype_size(t) == 2) {
    for (uint64_t b = 0; b < 0x10000; ++b) out.push_back(b);
    return out;
  }
  const CounterRng rng(7, 1);
  if (t == DType::kF32) {
    for (uint64_t sign = 0; sign < 2; ++sign)
      for (uint64_t e = 0; e < 256; ++e)
        for (uint64_t m : {0x0ull, 0x1ull, 0x2ull, 0x3ull, 0x7FFFFFull, 0x7FFFFEull, 0x400000ull,
                           0x3FFFFFull, 0x400001ull, 0x0DEADull, 0x12345ull})
          out.push_back(sign << 31 | e << 23 | m);
    for (uint64_t i = 0; i < 200000; ++i) out.push_back(rng.bits(i, 0) & 0xFFFFFFFFull);
    return out;
  }
  if (t == DType::kF64) {
    for (uint64_t sign = 0; sign < 2; ++sign)
      for (uint64_t e : {0ull, 1ull, 2ull, 1000ull, 1023ull, 2046ull, 2047ull})
        for (uint64_t m : {0x0ull, 0x1ull, 0xFFFFFFFFFFFFFull, 0x8000000000000ull, 0x7FFFFFFFull})
          out.push_back(sign << 63 | e << 52 | m);
    for (uint64_t i = 0; i < 20000; ++i) out.push_back(rng.bits(i, 0));
    return out;
  }
  if (t == DType::kBool) {
    for (uint64_t b = 0; b < 256; ++b) out.push_back(b);
    return out;
  }
  const uint64_t mask = t == DType::kI32 ? 0xFFFFFFFFull : ~0ull;
  for (uint64_t b :
       {0ull, 1ull, ~0ull, 0x7FFFFFFFull, 0x80000000ull, 0x7FFFFFFFFFFFFFFFull,
        0x8000000000000000ull, (1ull << 53) + 1, (1ull << 53) - 1, 0x5A5A5A5A5A5A5A5Aull})
    out.push_back(b & mask);
  for (uint64_t i = 0; i < 20000; ++i) out.push_back(rng.bits(i, 0) & mask);
  return out;
}

// fp64 inputs that exercise encode(t, .): around every binade edge of t (normal/subnormal,
// overflow), exact ties with even and odd kept parts, values just off the ties, f64 subnormals,
// zeros, infinities and NaNs with payloads (signaling and quiet), and random values at scales.
std::vector<double> encode_inputs(DType t) {
  std::vector<double> out;
  const CounterRng rng(11, 2);
  for (int e = -1080; e <= 1030; ++e) {
    for (double m : {1.0, 1.5, 1.25, 1.75, 1.0 + 0x1p-52, 2.0 - 0x1p-52}) {
      out.push_back(std::ldexp(m, e));
      out.push_back(-std::ldexp(m, e));
    }
  }
  if (is_floating(t)) {
    const int p = significand_bits(t);
    for (double base : {min_normal(t), min_subnormal(t), max_finite(t), 1.0, 3.0, 1024.0}) {
      const double ulp = ulp_of(t, base);
      for (double k : {0.5, 1.5, 2.5, 0.25, 0.75, 0.5 + 0x1p-40, 0.5 - 0x1p-40, 1.0, 3.0}) {
        for (double s : {1.0, -1.0}) {
          out.push_back(s * (base + k * ulp));
          out.push_back(s * (base - k * ulp));
        }
      }
      out.push_back(std::ldexp(base, -p));
    }
  }
  for (uint64_t b :
       {0x7FF0000000000001ull, 0x7FF4000000000000ull, 0x7FF8000000000000ull, 0xFFF800000000DEADull,
        0x7FF0000020000000ull, 0x7FF7FFFFFFFFFFFFull, 0x7FF0000000000000ull, 0xFFF0000000000000ull,
        0x0000000000000001ull, 0x800FFFFFFFFFFFFFull, 0x0ull, 0x8000000000000000ull})
    out.push_back(std::bit_cast<double>(b));
  for (double x : {0.5, 1.5, 2.5, -2.5, 3.5, 2147483647.5, -2147483648.5, 2147483648.0, 1e19, -1e19,
                   9007199254740993.0, 4.5e15})
    out.push_back(x);
  for (uint64_t i = 0; i < 50000; ++i) {
    const double scale = std::ldexp(1.0, static_cast<int>(rng.bits(i, 1) % 400) - 200);
    out.push_back(rng.normal(i, 0) * scale);
    out.push_back(std::bit_cast<double>(rng.bits(i, 2)));
  }
  return out;
}

constexpr DType kAll[] = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16,
                          DType::kI32, DType::kI64, DType::kBool};

// Views over one logical shape: dense, transposed (last two dims), every 2nd / 3rd element of
// the last dim, broadcast (dim 0 stride 0), storage offset, padded rows behind an offset.
struct View {
  const char* name;
  std::vector<int64_t> strides;
  int64_t offset;
};

std::vector<View> views_of(const Shape& shape) {
  const std::size_t r = shape.size();
  std::vector<View> out = {{"dense", contiguous_strides(shape), 0},
                           {"offset", contiguous_strides(shape), 3}};
  Shape wide = shape;
  wide.back() *= 2;
  out.push_back({"sliced2", contiguous_strides(wide), 0});
  out.back().strides.back() = 2;
  wide.back() = shape.back() * 3;
  out.push_back({"sliced3+1", contiguous_strides(wide), 1});
  out.back().strides.back() = 3;
  if (r >= 2) {
    Shape stored = shape;
    std::swap(stored[r - 1], stored[r - 2]);
    std::vector<int64_t> st = contiguous_strides(stored);
    std::swap(st[r - 1], st[r - 2]);
    out.push_back({"transposed", st, 0});
    std::vector<int64_t> bc = contiguous_strides(shape);
    bc[0] = 0;
    out.push_back({"broadcast", bc, 0});
    Shape padded = shape;
    padded[r - 1] += 3;
    out.push_back({"padded+5", contiguous_strides(padded), 5});
  }
  return out;
}

HostTensor view_of(DType t, const Shape& shape, const View& v) {
  return HostTensor(t, shape, v.strides, v.offset);
}

// A dense tensor holding `bits` in order.
HostTensor from_bits(DType t, const std::vector<uint64_t>& bits) {
  HostTensor x(t, {static_cast<int64_t>(bits.size())});
  for (std::size_t i = 0; i < bits.size(); ++i) x.set_bits_at(static_cast<int64_t>(i), bits[i]);
  return x;
}

std::vector<std::byte> raw_copy(const HostTensor& t) { return {t.raw().begin(), t.raw().end()}; }

// to_f64(first, out): any range of a row-major tensor, bit for bit what to_f64 gives there; a
// view that is not row-major, or a range past the end, is refused.
TEST(TensorBulk, ToF64OfARangeIsThatRangeOfToF64) {
  for (DType t : kAll) {
    const std::vector<uint64_t> bits = patterns(t);
    const HostTensor x = from_bits(t, bits);
    const std::vector<double> all = x.to_f64();
    const auto n = static_cast<int64_t>(bits.size());
    for (int64_t first : {int64_t{0}, int64_t{1}, n / 3, n - 1}) {
      std::vector<double> part(static_cast<std::size_t>(std::min<int64_t>(n - first, 5)), -7.0);
      x.to_f64(first, part);
      for (std::size_t i = 0; i < part.size(); ++i)
        ASSERT_EQ(dbits(part[i]), dbits(all[static_cast<std::size_t>(first) + i]))
            << dtype_name(t) << " element " << first + static_cast<int64_t>(i);
    }
    std::vector<double> two(2);
    EXPECT_THROW(x.to_f64(n - 1, two), std::out_of_range);
  }
  const HostTensor transposed(DType::kF32, {3, 2}, {1, 3});
  std::vector<double> one(1);
  EXPECT_THROW(transposed.to_f64(0, one), std::invalid_argument);
}

TEST(TensorBulk, ToF64DecodesEveryPatternBitForBit) {
  for (DType t : kAll) {
    const std::vector<uint64_t> bits = patterns(t);
    const HostTensor x = from_bits(t, bits);
    const std::vector<double> v = x.to_f64();
    ASSERT_EQ(v.size(), bits.size());
    for (std::size_t i = 0; i < bits.size(); ++i) {
      ASSERT_EQ(dbits(v[i]), dbits(decode(t, bits[i])))
          << dtype_name(t) << " bits 0x" << std::hex << bits[i];
      ASSERT_EQ(dbits(x.value_at(static_cast<int64_t>(i))), dbits(decode(t, bits[i])))
          << dtype_name(t) << " bits 0x" << std::hex << bits[i];
    }
  }
}

TEST(TensorBulk, AssignF64EncodesEveryInputAsEncode) {
  for (DType t : kAll) {
    const std::vector<double> in = encode_inputs(t);
    HostTensor x(t, {static_cast<int64_t>(in.size())});
    x.assign_f64(in);
    const HostTensor m = make_tensor(t, {static_cast<int64_t>(in.size())}, in);
    for (std::size_t i = 0; i < in.size(); ++i) {
      const auto k = static_cast<int64_t>(i);
      ASSERT_EQ(x.bits_at(k), encode(t, in[i]))
          << dtype_name(t) << " x = " << in[i] << " bits 0x" << std::hex << dbits(in[i]);
      ASSERT_EQ(m.bits_at(k), encode(t, in[i])) << dtype_name(t) << " " << in[i];
    }
  }
}

TEST(TensorBulk, AssignValuesOfIsAssignF64OfToF64) {
  for (DType t : kAll) {
    const std::vector<uint64_t> bits = patterns(t);
    const HostTensor src = from_bits(t, bits);
    HostTensor fast(t, src.shape());
    fast.assign_values_of(src);
    HostTensor slow(t, src.shape());
    slow.assign_f64(src.to_f64());
    for (std::size_t i = 0; i < bits.size(); ++i) {
      const auto k = static_cast<int64_t>(i);
      ASSERT_EQ(fast.bits_at(k), encode(t, decode(t, bits[i])))
          << dtype_name(t) << " bits 0x" << std::hex << bits[i];
      ASSERT_EQ(fast.bits_at(k), slow.bits_at(k)) << dtype_name(t);
    }
    EXPECT_EQ(raw_copy(fast), raw_copy(slow)) << dtype_name(t);
  }
  // A signaling NaN reads back quiet, its payload kept.
  HostTensor x(DType::kF32, {1});
  x.assign_values_of(from_bits(DType::kF32, {0xFF80BEEFull}));
  EXPECT_EQ(x.bits_at(0), 0xFFC0BEEFull);
}

TEST(TensorBulk, AssignValuesOfAcrossDtypesRounds) {
  const std::vector<uint64_t> bits = patterns(DType::kF32);
  const HostTensor src = from_bits(DType::kF32, bits);
  for (DType t : {DType::kF16, DType::kBF16, DType::kF64, DType::kI32}) {
    HostTensor x(t, src.shape());
    x.assign_values_of(src);
    for (std::size_t i = 0; i < bits.size(); ++i)
      ASSERT_EQ(x.bits_at(static_cast<int64_t>(i)), encode(t, decode(DType::kF32, bits[i])));
  }
}

// The per-element semantics of make_with_layout before the bulk paths: values in logical order,
// each storage position keeping the first logical element's value.
HostTensor reference_assign(DType t, const Shape& shape, const View& view,
                            const std::vector<double>& values) {
  HostTensor x = view_of(t, shape, view);
  std::vector<bool> written(static_cast<std::size_t>(x.storage_elems()), false);
  for (int64_t i = 0; i < x.numel() && static_cast<std::size_t>(i) < values.size(); ++i) {
    const auto pos = static_cast<std::size_t>(x.storage_index(i));
    if (!written[pos]) {
      written[pos] = true;
      x.set_value_at(i, values[static_cast<std::size_t>(i)]);
    }
  }
  return x;
}

TEST(TensorBulk, ViewsAgreeWithPerElementAccessBitForBit) {
  const CounterRng rng(3, 4);
  for (const Shape& shape : {Shape{5, 7}, Shape{3, 1}, Shape{1, 9}, Shape{2, 3, 4}, Shape{4}}) {
    for (const View& view : views_of(shape)) {
      for (DType t : kAll) {
        std::vector<double> values(static_cast<std::size_t>(numel(shape)));
        for (std::size_t i = 0; i < values.size(); ++i) {
          values[i] = i % 5 == 3
                          ? std::bit_cast<double>(0x7FF4000000000123ull)
                          : rng.normal(i, 0) * std::ldexp(1.0, static_cast<int>(i % 40) - 140);
        }
        const std::string what = std::string(view.name) + " " + std::string(dtype_name(t)) +
                                 " rank " + std::to_string(shape.size());
        // assign_f64 vs the per-element loop, every raw byte.
        HostTensor fast = view_of(t, shape, view);
        fast.assign_f64(values);
        ASSERT_EQ(raw_copy(fast), raw_copy(reference_assign(t, shape, view, values))) << what;
        // Fewer values than elements: the rest keep the initial pattern.
        const std::vector<double> few(values.begin(), values.begin() + values.size() / 2);
        HostTensor part = view_of(t, shape, view);
        part.assign_f64(few);
        ASSERT_EQ(raw_copy(part), raw_copy(reference_assign(t, shape, view, few))) << what;
        // to_f64 vs value_at.
        const std::vector<double> v = fast.to_f64();
        ASSERT_EQ(v.size(), values.size());
        for (int64_t i = 0; i < fast.numel(); ++i)
          ASSERT_EQ(dbits(v[static_cast<std::size_t>(i)]), dbits(fast.value_at(i))) << what;
        // contiguous(): dense, the same elements, guards of the initial pattern.
        const HostTensor c = fast.contiguous();
        ASSERT_TRUE(c.is_contiguous());
        HostTensor c_ref(t, shape, {}, 0, fast.guard_elems());
        for (int64_t i = 0; i < fast.numel(); ++i) c_ref.set_bits_at(i, fast.bits_at(i));
        ASSERT_EQ(raw_copy(c), raw_copy(c_ref)) << what;
        // assign_values_of into this view, from a dense source and from a strided one.
        HostTensor dense(t, shape);
        dense.assign_f64(values);
        for (const HostTensor* src : {&dense, &fast}) {
          HostTensor into = view_of(t, shape, view);
          into.assign_values_of(*src);
          HostTensor into_ref = view_of(t, shape, view);
          into_ref.assign_f64(src->to_f64());
          ASSERT_EQ(raw_copy(into), raw_copy(into_ref)) << what;
          ASSERT_EQ(raw_copy(into), raw_copy(reference_assign(t, shape, view, src->to_f64())))
              << what;
        }
        // copy_elements_from: into every view, and so from every view into every other.
        for (const View& other : views_of(shape)) {
          HostTensor to = view_of(t, shape, other);
          to.copy_elements_from(fast);
          HostTensor to_ref = view_of(t, shape, other);
          for (int64_t i = 0; i < fast.numel(); ++i) to_ref.set_bits_at(i, fast.bits_at(i));
          ASSERT_EQ(raw_copy(to), raw_copy(to_ref)) << what << " -> " << other.name;
        }
      }
    }
  }
}

TEST(TensorBulk, CopyElementsFromKeepsAddressShiftAndGuards) {
  const std::vector<double> values = {1, -2, 3.5, 0x1p-140, -0.0, 6};
  const HostTensor src = make_tensor(DType::kF32, {2, 3}, values);
  HostTensor dst(DType::kF32, {2, 3}, {}, 0, 5, 3, 0xABCDEF01ull);
  dst.copy_elements_from(src);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(dst.bits_at(i), src.bits_at(i));
  uint32_t front = 0;
  std::memcpy(&front, dst.raw().data(), 4);
  EXPECT_EQ(front, 0xABCDEF01u);
  uint32_t back = 0;
  std::memcpy(&back, dst.raw().data() + dst.raw().size() - 4, 4);
  EXPECT_EQ(back, 0xABCDEF01u);
  EXPECT_THROW(HostTensor(DType::kF64, {2, 3}).copy_elements_from(src), std::invalid_argument);
}

TEST(TensorBulk, FillBitsConstructorFillsEveryByte) {
  const HostTensor a(DType::kF16, {3, 4}, {8, 2}, 1, 4, 5, 0x1234ull);
  HostTensor b(DType::kF16, {3, 4}, {8, 2}, 1, 4, 5);
  b.fill_raw(0x1234ull);
  EXPECT_EQ(raw_copy(a), raw_copy(b));
}

#ifdef KCV_TEST_MXCSR
// FTZ and DAZ, as a fast-math library loaded into the process sets them: the bulk paths still
// read and write subnormals exactly.
TEST(TensorBulk, SubnormalsExactUnderFtzDaz) {
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040u);  // FTZ (bit 15) | DAZ (bit 6)
  const std::vector<uint64_t> bits = {0x00000001ull, 0x807FFFFFull, 0x00400000ull, 0x3F800000ull};
  const HostTensor x = from_bits(DType::kF32, bits);
  const std::vector<double> v = x.to_f64();
  HostTensor y(DType::kF32, x.shape());
  y.assign_f64(v);
  HostTensor z(DType::kF32, x.shape());
  z.assign_values_of(x);
  const std::vector<double> tiny = {0x1p-149, -0x1p-127, 0x1.8p-140};
  HostTensor w(DType::kF32, {3});
  w.assign_f64(tiny);
  _mm_setcsr(saved);
  for (std::size_t i = 0; i < bits.size(); ++i) {
    EXPECT_EQ(dbits(v[i]), dbits(decode(DType::kF32, bits[i])));
    EXPECT_EQ(y.bits_at(static_cast<int64_t>(i)), bits[i]);
    EXPECT_EQ(z.bits_at(static_cast<int64_t>(i)), bits[i]);
  }
  for (std::size_t i = 0; i < tiny.size(); ++i)
    EXPECT_EQ(w.bits_at(static_cast<int64_t>(i)), encode(DType::kF32, tiny[i]));
  EXPECT_EQ(w.bits_at(0), 1u);
}
#endif

}  // namespace
}  // namespace kcv
