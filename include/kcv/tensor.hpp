// File: include/kcv/tensor.hpp
// Host tensors for probes and results. A HostTensor owns one buffer laid out as
//   [front guard | storage | back guard]
// where storage holds the tensor's elements at `storage_offset + sum(i_k * stride_k)` and may
// contain padding the view never touches (sliced, padded-row or offset layouts). Guard bands
// and padding are filled with a sentinel so that executors can prove, bit for bit, that a
// candidate wrote nowhere but inside its outputs and read inputs by stride.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "kcv/dtype.hpp"
#include "kcv/kcv_kernel.h"

namespace kcv {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& shape);
/// Row-major strides, in elements.
std::vector<int64_t> contiguous_strides(const Shape& shape);

class HostTensor {
 public:
  HostTensor() = default;
  /// Contiguous when `strides` is empty. `guard_elems` elements of guard on each side.
  /// `address_shift` adds that many bytes before the front guard (different addresses and
  /// alignments for the same logical tensor).
  HostTensor(DType dtype, Shape shape, std::vector<int64_t> strides = {},
             int64_t storage_offset = 0, int64_t guard_elems = 64, int64_t address_shift = 0);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t storage_offset() const { return storage_offset_; }
  int64_t numel() const;
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  bool is_contiguous() const;
  /// Elements in storage (view extent plus offset and padding), excluding guards.
  int64_t storage_elems() const { return storage_elems_; }
  int64_t guard_elems() const { return guard_elems_; }

  /// Storage position (element index into storage) of logical row-major index `i`.
  int64_t storage_index(int64_t i) const;
  /// Element (0,...,0).
  std::byte* data();
  const std::byte* data() const;
  /// Whole buffer: guards + storage, for snapshots and bitwise audits.
  std::span<std::byte> raw();
  std::span<const std::byte> raw() const;
  /// Byte offset of storage element 0 inside raw().
  std::size_t raw_storage_begin() const;

  /// Bits / value of logical row-major element i.
  uint64_t bits_at(int64_t i) const;
  void set_bits_at(int64_t i, uint64_t bits);
  double value_at(int64_t i) const;
  void set_value_at(int64_t i, double x);  // rounds RN-even to dtype

  /// Fill every byte of raw() (guards, padding and elements) with a repeating element pattern.
  void fill_raw(uint64_t element_bits);
  /// True for storage positions that the view covers (size storage_elems()).
  std::vector<bool> covered_storage() const;

  /// A contiguous copy with the same logical contents and no padding.
  HostTensor contiguous() const;
  /// All logical elements as fp64 values, row-major.
  std::vector<double> to_f64() const;

  /// A C ABI view of this tensor; valid while this tensor lives and is not moved.
  kcv_tensor view();

 private:
  DType dtype_ = DType::kF32;
  Shape shape_;
  std::vector<int64_t> strides_;
  int64_t storage_offset_ = 0;
  int64_t storage_elems_ = 0;
  int64_t guard_elems_ = 0;
  int64_t address_shift_ = 0;
  bool row_major_ = true;  // strides are the contiguous ones: element i sits at storage_offset_ + i
  // Bytes left uninitialised on allocation: the constructor fills every one with the poison
  // pattern anyway, and zeroing gigabytes first would be a wasted pass over fresh pages.
  template <typename T>
  struct ForOverwrite : std::allocator<T> {
    template <typename U>
    struct rebind {
      using other = ForOverwrite<U>;
    };
    template <typename U>
    void construct(U* p) noexcept {
      ::new (static_cast<void*>(p)) U;
    }
    template <typename U, typename... Args>
    void construct(U* p, Args&&... args) {
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
  };
  std::vector<std::byte, ForOverwrite<std::byte>> buffer_;
};

/// The poison pattern a new HostTensor is filled with (guards, padding and elements): a quiet NaN
/// with the payload 0xDEAD.. for floating types, 0x5A5A.. for integers, 0x5A for bool.
uint64_t initial_fill_bits(DType dtype);

/// A tensor built from fp64 values, rounded to dtype, contiguous.
HostTensor make_tensor(DType dtype, const Shape& shape, const std::vector<double>& values);

}  // namespace kcv
