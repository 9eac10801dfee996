// File: src/numeric/tensor.cpp
// HostTensor: one byte buffer [address shift | front guard | storage | back guard]. raw() starts
// after the address shift, so audits compare the same bytes whatever the shift. Elements are
// read and written with memcpy through dtype-sized bit patterns, so misaligned (shifted)
// storage and 16-bit formats need no special cases. Strides are taken as given (>= 0); the
// storage extent is the largest index the view reaches plus one.
#include "kcv/tensor.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>

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
    : dtype_(dtype),
      shape_(std::move(shape)),
      strides_(strides.empty() ? contiguous_strides(shape_) : std::move(strides)),
      storage_offset_(storage_offset),
      guard_elems_(guard_elems),
      address_shift_(address_shift) {
  if (strides_.size() != shape_.size()) {
    throw std::invalid_argument("HostTensor: strides and shape differ in rank");
  }
  storage_elems_ = storage_offset_ + view_extent(shape_, strides_);
  row_major_ = is_contiguous();
  const auto size = static_cast<int64_t>(dtype_size(dtype_));
  buffer_.resize(static_cast<std::size_t>(address_shift_ + (storage_elems_ + 2 * guard_elems_) * size));
  fill_raw(initial_fill_bits(dtype_));
}

int64_t HostTensor::numel() const { return kcv::numel(shape_); }

bool HostTensor::is_contiguous() const {
  const std::vector<int64_t> expected = contiguous_strides(shape_);
  for (std::size_t k = 0; k < shape_.size(); ++k) {
    if (shape_[k] > 1 && strides_[k] != expected[k]) {
      return false;
    }
  }
  return true;
}

int64_t HostTensor::storage_index(int64_t i) const {
  // The judges read every element of every output through here: skip the per-dimension
  // divisions for the common dense case.
  if (row_major_) return storage_offset_ + i;
  int64_t pos = storage_offset_;
  for (std::size_t k = shape_.size(); k > 0; --k) {
    const int64_t d = shape_[k - 1];
    pos += (i % d) * strides_[k - 1];
    i /= d;
  }
  return pos;
}

std::span<std::byte> HostTensor::raw() {
  return {buffer_.data() + address_shift_, buffer_.size() - static_cast<std::size_t>(address_shift_)};
}

std::span<const std::byte> HostTensor::raw() const {
  return {buffer_.data() + address_shift_, buffer_.size() - static_cast<std::size_t>(address_shift_)};
}

std::size_t HostTensor::raw_storage_begin() const {
  return static_cast<std::size_t>(guard_elems_) * dtype_size(dtype_);
}

std::byte* HostTensor::data() {
  return raw().data() + raw_storage_begin() + storage_offset_ * dtype_size(dtype_);
}

const std::byte* HostTensor::data() const {
  return raw().data() + raw_storage_begin() + storage_offset_ * dtype_size(dtype_);
}

uint64_t HostTensor::bits_at(int64_t i) const {
  const std::size_t size = dtype_size(dtype_);
  uint64_t bits = 0;  // little-endian host: the element fills the low bytes
  std::memcpy(&bits, raw().data() + raw_storage_begin() + storage_index(i) * size, size);
  return bits;
}

void HostTensor::set_bits_at(int64_t i, uint64_t bits) {
  const std::size_t size = dtype_size(dtype_);
  std::memcpy(raw().data() + raw_storage_begin() + storage_index(i) * size, &bits, size);
}

double HostTensor::value_at(int64_t i) const {
  const uint64_t bits = bits_at(i);
  // The judges' common case, a normal fp32 value, through the hardware conversion. Only normal
  // values: a subnormal would read as 0 under DAZ (an in-process candidate built with fast-math
  // can set it), and decode() keeps a NaN's payload bit for bit.
  if (dtype_ == DType::kF32) {
    const auto b32 = static_cast<uint32_t>(bits);
    const uint32_t exponent = (b32 >> 23) & 0xFFu;
    if (exponent != 0 && exponent != 0xFFu) return static_cast<double>(std::bit_cast<float>(b32));
  }
  return decode(dtype_, bits);
}

void HostTensor::set_value_at(int64_t i, double x) { set_bits_at(i, encode(dtype_, x)); }

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
  const int64_t n = numel();
  for (int64_t i = 0; i < n; ++i) {
    out.set_bits_at(i, bits_at(i));
  }
  return out;
}

std::vector<double> HostTensor::to_f64() const {
  const int64_t n = numel();
  std::vector<double> values(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    values[static_cast<std::size_t>(i)] = value_at(i);
  }
  return values;
}

kcv_tensor HostTensor::view() {
  return kcv_tensor{static_cast<void*>(data()), static_cast<int32_t>(dtype_),
                    static_cast<int32_t>(shape_.size()), shape_.data(), strides_.data()};
}

HostTensor make_tensor(DType dtype, const Shape& shape, const std::vector<double>& values) {
  HostTensor t(dtype, shape);
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n && static_cast<std::size_t>(i) < values.size(); ++i) {
    t.set_value_at(i, values[static_cast<std::size_t>(i)]);
  }
  return t;
}

}  // namespace kcv
