// File: src/numeric/tensor.cpp
// HostTensor: one byte buffer [address shift | front guard | storage | back guard]. raw() starts
// after the address shift, so audits compare the same bytes whatever the shift. Elements are
// read and written with memcpy through dtype-sized bit patterns, so misaligned (shifted)
// storage and 16-bit formats need no special cases. Strides are taken as given (>= 0); the
// storage extent is the largest index the view reaches plus one. The bulk operations (to_f64,
// assign_f64, assign_values_of, copy_elements_from, contiguous) walk the view row by row with
// loops typed per dtype (numeric/element_codec.hpp) and give exactly what the per-element
// accessors give.
#include "kcv/tensor.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "numeric/element_codec.hpp"

namespace kcv {
namespace {

int64_t view_extent(const Shape& shape, const std::vector<int64_t>& strides) {
  int64_t last = 0;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 0) {
      return 0;
    }
    last += (shape[k] - 1) * strides[k];
  }
  return last + 1;
}

// The strides are the contiguous ones (those of dimensions of one element may be anything).
bool row_major(const Shape& shape, const std::vector<int64_t>& strides) {
  const std::vector<int64_t> expected = contiguous_strides(shape);
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] > 1 && strides[k] != expected[k]) {
      return false;
    }
  }
  return true;
}

}  // namespace

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    n *= d;
  }
  return n;
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (std::size_t k = shape.size(); k > 1; --k) {
    strides[k - 2] = strides[k - 1] * shape[k - 1];
  }
  return strides;
}

uint64_t initial_fill_bits(DType dtype) {
  switch (dtype) {
    case DType::kF64: return 0x7FF8DEADBEEFDEADull;
    case DType::kF32: return 0x7FC0DEADull;
    case DType::kF16: return 0x7E5Aull;
    case DType::kBF16: return 0x7FDAull;
    case DType::kI32: return 0x5A5A5A5Aull;
    case DType::kI64: return 0x5A5A5A5A5A5A5A5Aull;
    case DType::kBool: return 0x5Aull;
  }
  return 0;
}

HostTensor::HostTensor(DType dtype, Shape shape, std::vector<int64_t> strides,
                       int64_t storage_offset, int64_t guard_elems, int64_t address_shift)
    : HostTensor(dtype, std::move(shape), std::move(strides), storage_offset, guard_elems,
                 address_shift, initial_fill_bits(dtype)) {}

HostTensor::HostTensor(DType dtype, Shape shape, std::vector<int64_t> strides,
                       int64_t storage_offset, int64_t guard_elems, int64_t address_shift,
                       uint64_t fill_bits)
    : HostTensor(dtype, std::move(shape), std::move(strides), storage_offset, guard_elems,
                 address_shift, NoFill{}) {
  fill_raw(fill_bits);
}

HostTensor::HostTensor(DType dtype, Shape shape, int64_t guard_elems, int64_t address_shift,
                       uint64_t guard_bits, GuardsOnly)
    : HostTensor(dtype, std::move(shape), {}, 0, guard_elems, address_shift, NoFill{}) {
  const std::span<std::byte> bytes = raw();
  const std::size_t front = raw_storage_begin();
  const std::size_t back = front + static_cast<std::size_t>(storage_elems_ * elem_size_);
  const auto size = static_cast<std::size_t>(elem_size_);
  // little-endian: an element's pattern is the low bytes of guard_bits; guards are whole elements
  for (std::size_t at = 0; at < front; at += size)
    std::memcpy(bytes.data() + at, &guard_bits, size);
  for (std::size_t at = back; at < bytes.size(); at += size)
    std::memcpy(bytes.data() + at, &guard_bits, size);
}

HostTensor::HostTensor(DType dtype, Shape shape, std::vector<int64_t> strides,
                       int64_t storage_offset, int64_t guard_elems, int64_t address_shift,
                       FilledByCaller)
    : HostTensor(dtype, std::move(shape), std::move(strides), storage_offset, guard_elems,
                 address_shift, NoFill{}) {}

HostTensor::HostTensor(DType dtype, Shape shape, std::vector<int64_t> strides,
                       int64_t storage_offset, int64_t guard_elems, int64_t address_shift, NoFill)
    : dtype_(dtype),
      shape_(std::move(shape)),
      strides_(strides.empty() ? contiguous_strides(shape_) : std::move(strides)),
      storage_offset_(storage_offset),
      guard_elems_(guard_elems),
      address_shift_(address_shift),
      elem_size_(static_cast<int64_t>(dtype_size(dtype))) {
  if (strides_.size() != shape_.size()) {
    throw std::invalid_argument("HostTensor: strides and shape differ in rank");
  }
  numel_ = kcv::numel(shape_);
  storage_elems_ = storage_offset_ + view_extent(shape_, strides_);
  row_major_ = row_major(shape_, strides_);
  const auto size = static_cast<int64_t>(dtype_size(dtype_));
  buffer_.resize(
      static_cast<std::size_t>(address_shift_ + (storage_elems_ + 2 * guard_elems_) * size));
}

int64_t HostTensor::strided_index(int64_t i) const {
  int64_t pos = storage_offset_;
  for (std::size_t k = shape_.size(); k > 0; --k) {
    const int64_t d = shape_[k - 1];
    pos += (i % d) * strides_[k - 1];
    i /= d;
  }
  return pos;
}

template <typename Fn>
void HostTensor::for_each_row(Fn&& fn) const {
  const int64_t n = numel();
  if (n <= 0) return;
  if (row_major_) {
    fn(int64_t{0}, storage_offset_, n, int64_t{1});
    return;
  }
  // Rank >= 1 here (a scalar is row-major): the last dimension is the row, the others an
  // odometer whose storage position moves by their strides.
  const std::size_t r = shape_.size();
  const int64_t inner = shape_[r - 1];
  const int64_t inner_stride = strides_[r - 1];
  std::vector<int64_t> index(r - 1, 0);
  int64_t pos = storage_offset_;
  for (int64_t first = 0; first < n; first += inner) {
    fn(first, pos, inner, inner_stride);
    for (std::size_t k = r - 1; k-- > 0;) {
      if (++index[k] < shape_[k]) {
        pos += strides_[k];
        break;
      }
      pos -= (shape_[k] - 1) * strides_[k];
      index[k] = 0;
    }
  }
}

void HostTensor::fill_raw(uint64_t element_bits) {
  // Every new tensor is filled, so this runs over every byte the executors allocate: one element,
  // then doubling copies (the filled prefix is always whole elements, so the pattern's phase holds).
  const std::size_t size = dtype_size(dtype_);
  std::span<std::byte> bytes = raw();
  if (bytes.size() < size) {
    for (std::size_t j = 0; j < bytes.size(); ++j)
      bytes[j] = static_cast<std::byte>((element_bits >> (8 * j)) & 0xFF);
    return;
  }
  std::memcpy(bytes.data(), &element_bits, size);  // little-endian: the low bytes first
  for (std::size_t filled = size; filled < bytes.size();) {
    const std::size_t n = std::min(filled, bytes.size() - filled);
    std::memcpy(bytes.data() + filled, bytes.data(), n);
    filled += n;
  }
}

std::vector<bool> HostTensor::covered_storage() const {
  std::vector<bool> covered(static_cast<std::size_t>(storage_elems_), false);
  const int64_t n = numel();
  for (int64_t i = 0; i < n; ++i) {
    covered[static_cast<std::size_t>(storage_index(i))] = true;
  }
  return covered;
}

HostTensor HostTensor::contiguous() const {
  HostTensor out(dtype_, shape_, {}, 0, guard_elems_);
  out.copy_elements_from(*this);
  return out;
}

std::vector<double> HostTensor::to_f64() const {
  std::vector<double> values;
  to_f64(values);
  return values;
}

void HostTensor::to_f64(std::vector<double>& values) const {
  values.resize(static_cast<std::size_t>(numel()));
  numeric::dispatch_dtype(dtype_, [&]<DType T>() {
    const std::byte* base = storage();
    for_each_row([&](int64_t first, int64_t pos, int64_t count, int64_t stride) {
      numeric::decode_run<T>(base + pos * elem_size_, stride, static_cast<std::size_t>(count),
                             values.data() + first);
    });
  });
}

void HostTensor::to_f64(int64_t first, std::span<double> out) const {
  if (!row_major_) throw std::invalid_argument("HostTensor::to_f64(first, out): not row-major");
  if (first < 0 || first + static_cast<int64_t>(out.size()) > numel_)
    throw std::out_of_range("HostTensor::to_f64(first, out): range outside the tensor");
  numeric::dispatch_dtype(dtype_, [&]<DType T>() {
    numeric::decode_run<T>(data() + first * elem_size_, 1, out.size(), out.data());
  });
}

namespace {

// True when no two logical elements of the view share a storage position: the dimensions of
// more than one element, ordered by stride, each step over the whole extent of the ones before.
bool non_overlapping(const Shape& shape, const std::vector<int64_t>& strides) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 0) return true;
    if (shape[k] > 1) dims.emplace_back(strides[k], shape[k]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t extent = 1;  // storage positions spanned by the dimensions so far
  for (const auto& [stride, size] : dims) {
    if (stride < extent) return false;
    extent = stride * (size - 1) + extent;
  }
  return true;
}

}  // namespace

bool HostTensor::elements_distinct() const {
  return row_major_ || non_overlapping(shape_, strides_);
}

void HostTensor::assign_f64(std::span<const double> values) {
  const int64_t m = std::min<int64_t>(numel(), static_cast<int64_t>(values.size()));
  if (m <= 0) return;
  if (!row_major_ && !non_overlapping(shape_, strides_)) {
    // Shared storage: writing in reverse logical order leaves each position the value of the
    // first logical element that maps to it.
    for (int64_t i = m; i-- > 0;) set_value_at(i, values[static_cast<std::size_t>(i)]);
    return;
  }
  numeric::dispatch_dtype(dtype_, [&]<DType T>() {
    std::byte* base = storage();
    for_each_row([&](int64_t first, int64_t pos, int64_t count, int64_t stride) {
      if (first >= m) return;
      numeric::encode_run<T>(values.data() + first,
                             static_cast<std::size_t>(std::min(count, m - first)),
                             base + pos * elem_size_, stride);
    });
  });
}

void HostTensor::assign_f64(int64_t first, std::span<const double> values) {
  if (!row_major_)
    throw std::invalid_argument("HostTensor::assign_f64(first, values): not row-major");
  if (first < 0 || first + static_cast<int64_t>(values.size()) > numel_)
    throw std::out_of_range("HostTensor::assign_f64(first, values): range outside the tensor");
  numeric::dispatch_dtype(dtype_, [&]<DType T>() {
    numeric::encode_run<T>(values.data(), values.size(), data() + first * elem_size_, 1);
  });
}

void HostTensor::assign_values_of(const HostTensor& src) {
  if (src.dtype_ != dtype_) {
    assign_f64(src.to_f64());
    return;
  }
  const int64_t m = std::min(numel(), src.numel());
  if (m <= 0) return;
  if (!row_major_ && !non_overlapping(shape_, strides_)) {
    for (int64_t i = m; i-- > 0;) set_value_at(i, src.value_at(i));
    return;
  }
  copy_elements_from(src);
  numeric::dispatch_dtype(dtype_, [&]<DType T>() {
    using C = numeric::Codec<T>;
    using S = typename C::S;
    if constexpr (T == DType::kF64 || T == DType::kI32) {
      return;  // every element reads back as itself
    } else {
      std::byte* base = storage();
      for_each_row([&](int64_t first, int64_t pos, int64_t count, int64_t stride) {
        if (first >= m) return;
        std::byte* p = base + pos * elem_size_;
        const int64_t end = std::min(count, m - first);
        for (int64_t k = 0; k < end; ++k) {
          std::byte* e = p + k * stride * elem_size_;
          numeric::store_element<S>(e, C::recode(numeric::load_element<S>(e)));
        }
      });
    }
  });
}

void HostTensor::assign_values_of(const HostTensor& src, int64_t first, int64_t count) {
  if (!src.row_major_ || src.dtype_ != dtype_ || !elements_distinct())
    throw std::invalid_argument(
        "HostTensor::assign_values_of(src, first, count): not a row-major source of this dtype "
        "into distinct elements");
  if (first < 0 || count < 0 || first + count > std::min(numel_, src.numel_))
    throw std::out_of_range("HostTensor::assign_values_of(src, first, count): range outside");
  if (!row_major_) {  // a strided view: element by element, each to its own position
    numeric::dispatch_dtype(dtype_, [&]<DType T>() {
      using C = numeric::Codec<T>;
      using S = typename C::S;
      const std::byte* from = src.data();
      std::byte* base = storage();
      for (int64_t i = first; i < first + count; ++i) {
        const S bits = numeric::load_element<S>(from + i * elem_size_);
        numeric::store_element<S>(base + strided_index(i) * elem_size_,
                                  T == DType::kF64 || T == DType::kI32 ? bits : C::recode(bits));
      }
    });
    return;
  }
  std::byte* to = data() + first * elem_size_;
  std::memcpy(to, src.data() + first * elem_size_, static_cast<std::size_t>(count * elem_size_));
  numeric::dispatch_dtype(dtype_, [&]<DType T>() {
    using C = numeric::Codec<T>;
    using S = typename C::S;
    if constexpr (T != DType::kF64 && T != DType::kI32) {  // those read back as themselves
      for (int64_t k = 0; k < count; ++k) {
        std::byte* e = to + k * elem_size_;
        numeric::store_element<S>(e, C::recode(numeric::load_element<S>(e)));
      }
    }
  });
}

void HostTensor::copy_elements_from(const HostTensor& src) {
  if (src.dtype_ != dtype_) throw std::invalid_argument("HostTensor: copy between dtypes");
  const int64_t m = std::min(numel(), src.numel());
  if (m <= 0) return;
  if (row_major_ && src.row_major_) {  // both dense: one block
    std::memcpy(data(), src.data(), static_cast<std::size_t>(m * elem_size_));
    return;
  }
  numeric::dispatch_dtype(dtype_, [&]<DType T>() {
    using S = numeric::StorageOf<T>;
    const std::byte* from = src.storage();
    std::byte* to = storage();
    if (row_major_) {  // gather the source's rows into one dense block
      src.for_each_row([&](int64_t first, int64_t pos, int64_t count, int64_t stride) {
        if (first >= m) return;
        const int64_t end = std::min(count, m - first);
        std::byte* out = to + (storage_offset_ + first) * elem_size_;
        const std::byte* in = from + pos * elem_size_;
        if (stride == 1) {
          std::memcpy(out, in, static_cast<std::size_t>(end * elem_size_));
          return;
        }
        for (int64_t k = 0; k < end; ++k)
          numeric::store_element<S>(out + k * elem_size_,
                                    numeric::load_element<S>(in + k * stride * elem_size_));
      });
      return;
    }
    const bool same_layout = shape_ == src.shape_ && strides_ == src.strides_;
    for_each_row([&](int64_t first, int64_t pos, int64_t count, int64_t stride) {
      if (first >= m) return;
      const int64_t end = std::min(count, m - first);
      std::byte* out = to + pos * elem_size_;
      if (src.row_major_ || same_layout) {  // the source's row: dense, or strided as this one
        const int64_t in_pos = src.row_major_ ? src.storage_offset_ + first
                                              : pos - storage_offset_ + src.storage_offset_;
        const std::byte* in = from + in_pos * elem_size_;
        const int64_t in_stride = src.row_major_ ? 1 : stride;
        for (int64_t k = 0; k < end; ++k)
          numeric::store_element<S>(out + k * stride * elem_size_,
                                    numeric::load_element<S>(in + k * in_stride * elem_size_));
        return;
      }
      for (int64_t k = 0; k < end; ++k)
        numeric::store_element<S>(
            out + k * stride * elem_size_,
            numeric::load_element<S>(from + src.storage_index(first + k) * elem_size_));
    });
  });
}

kcv_tensor HostTensor::view() {
  return kcv_tensor{static_cast<void*>(data()), static_cast<int32_t>(dtype_),
                    static_cast<int32_t>(shape_.size()), shape_.data(), strides_.data()};
}

HostTensor make_tensor(DType dtype, const Shape& shape, const std::vector<double>& values) {
  HostTensor t(dtype, shape);
  t.assign_f64(values);
  return t;
}

}  // namespace kcv
