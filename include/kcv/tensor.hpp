// File: include/kcv/tensor.hpp
// Host tensors for probes and results. A HostTensor owns one buffer laid out as
//   [front guard | storage | back guard]
// where storage holds the tensor's elements at `storage_offset + sum(i_k * stride_k)` and may
// contain padding the view never touches (sliced, padded-row or offset layouts). Guard bands
// and padding are filled with a sentinel so that executors can prove, bit for bit, that a
// candidate wrote nowhere but inside its outputs and read inputs by stride.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
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

/// Tag of the HostTensor constructor that fills only the guards.
struct GuardsOnly {};
/// Tag of the HostTensor constructor that fills nothing: the caller writes every byte of raw()
/// before anything reads it (a large buffer filled on threads, src/exec/byte_passes.hpp).
struct FilledByCaller {};

class HostTensor {
 public:
  HostTensor() = default;
  /// Contiguous when `strides` is empty. `guard_elems` elements of guard on each side.
  /// `address_shift` adds that many bytes before the front guard (different addresses and
  /// alignments for the same logical tensor).
  HostTensor(DType dtype, Shape shape, std::vector<int64_t> strides = {},
             int64_t storage_offset = 0, int64_t guard_elems = 64, int64_t address_shift = 0);
  /// As above, every byte of raw() holding the repeating element pattern `fill_bits` instead of
  /// initial_fill_bits(dtype) (one pass over the buffer instead of two for a caller that would
  /// fill_raw() it at once).
  HostTensor(DType dtype, Shape shape, std::vector<int64_t> strides, int64_t storage_offset,
             int64_t guard_elems, int64_t address_shift, uint64_t fill_bits);
  /// Contiguous, every guard byte holding the element pattern `guard_bits` and the elements left
  /// uninitialised: for a buffer whose every element is written before it is read (a trusted
  /// worker's output, copied back whole from its call file). Saves a pass over fresh pages.
  HostTensor(DType dtype, Shape shape, int64_t guard_elems, int64_t address_shift,
             uint64_t guard_bits, GuardsOnly);
  /// As the first constructor, no byte of raw() written (see FilledByCaller).
  HostTensor(DType dtype, Shape shape, std::vector<int64_t> strides, int64_t storage_offset,
             int64_t guard_elems, int64_t address_shift, FilledByCaller);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t storage_offset() const { return storage_offset_; }
  int64_t numel() const { return numel_; }
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  bool is_contiguous() const { return row_major_; }
  /// No two logical elements share a storage position: any layout but a broadcast's.
  bool elements_distinct() const;
  /// Elements in storage (view extent plus offset and padding), excluding guards.
  int64_t storage_elems() const { return storage_elems_; }
  int64_t guard_elems() const { return guard_elems_; }

  /// Storage position (element index into storage) of logical row-major index `i`.
  int64_t storage_index(int64_t i) const {
    // The judges read every element of every output through here: skip the per-dimension
    // divisions for the common dense case.
    return row_major_ ? storage_offset_ + i : strided_index(i);
  }
  /// Element (0,...,0).
  std::byte* data() { return storage() + storage_offset_ * elem_size_; }
  const std::byte* data() const { return storage() + storage_offset_ * elem_size_; }
  /// Whole buffer: guards + storage, for snapshots and bitwise audits.
  std::span<std::byte> raw() {
    return {buffer_.data() + address_shift_,
            buffer_.size() - static_cast<std::size_t>(address_shift_)};
  }
  std::span<const std::byte> raw() const {
    return {buffer_.data() + address_shift_,
            buffer_.size() - static_cast<std::size_t>(address_shift_)};
  }
  /// Byte offset of storage element 0 inside raw().
  std::size_t raw_storage_begin() const {
    return static_cast<std::size_t>(guard_elems_) * static_cast<std::size_t>(elem_size_);
  }

  /// Bits / value of logical row-major element i. Inline: the judges' and audits' per-element
  /// loops call them hundreds of millions of times.
  uint64_t bits_at(int64_t i) const {
    const std::byte* p = storage() + storage_index(i) * elem_size_;
    switch (elem_size_) {  // little-endian host: the element fills the low bytes
      case 8:
        return load<uint64_t>(p);
      case 4:
        return load<uint32_t>(p);
      case 2:
        return load<uint16_t>(p);
      default:
        return load<uint8_t>(p);
    }
  }
  void set_bits_at(int64_t i, uint64_t bits) {
    std::byte* p = storage() + storage_index(i) * elem_size_;
    switch (elem_size_) {
      case 8:
        return store(p, bits);
      case 4:
        return store(p, static_cast<uint32_t>(bits));
      case 2:
        return store(p, static_cast<uint16_t>(bits));
      default:
        return store(p, static_cast<uint8_t>(bits));
    }
  }
  double value_at(int64_t i) const {
    const uint64_t bits = bits_at(i);
    // The judges' common case, a normal fp32 value, through the hardware conversion. Only normal
    // values: a subnormal would read as 0 under DAZ (an in-process candidate built with
    // fast-math can set it), and decode() keeps a NaN's payload bit for bit.
    if (dtype_ == DType::kF32) {
      const auto b32 = static_cast<uint32_t>(bits);
      const uint32_t exponent = (b32 >> 23) & 0xFFu;
      if (exponent != 0 && exponent != 0xFFu) return static_cast<double>(std::bit_cast<float>(b32));
    }
    if (dtype_ == DType::kF64) return std::bit_cast<double>(bits);
    return decode(dtype_, bits);
  }
  void set_value_at(int64_t i, double x) { set_bits_at(i, encode(dtype_, x)); }  // RN-even

  /// Fill every byte of raw() (guards, padding and elements) with a repeating element pattern.
  void fill_raw(uint64_t element_bits);
  /// True for storage positions that the view covers (size storage_elems()).
  std::vector<bool> covered_storage() const;

  /// A contiguous copy with the same logical contents and no padding.
  HostTensor contiguous() const;
  /// All logical elements as fp64 values, row-major: value_at(i) for every i.
  std::vector<double> to_f64() const;
  /// to_f64 into `out` (its size becomes numel()), reusing out's storage: an array kept from an
  /// earlier tensor of the same size is neither allocated nor faulted in again.
  void to_f64(std::vector<double>& out) const;
  /// Logical elements [first, first + out.size()) as fp64 values, what to_f64 gives there: a
  /// caller converting a large tensor splits it over threads by ranges. @pre is_contiguous()
  void to_f64(int64_t first, std::span<double> out) const;
  /// Logical elements [0, min(numel, values.size())) set to `values`, rounded to the dtype
  /// (encode()). Where several logical elements share a storage position (a broadcast view),
  /// the first of them keeps its value.
  void assign_f64(std::span<const double> values);
  /// Logical elements [first, first + values.size()) set to `values`, what assign_f64 of the
  /// whole array sets there: a caller filling a large tensor splits it over threads by ranges.
  /// @pre is_contiguous()
  void assign_f64(int64_t first, std::span<const double> values);
  /// assign_f64(src.to_f64()) without the fp64 values: each element of `src` decoded and encoded
  /// in this dtype; within one dtype, the bits themselves except that a NaN gets its quiet bit
  /// (and int64 beyond 2^53, bool bytes other than 0/1 change as a value read and written back
  /// does). `src` may have any layout.
  void assign_values_of(const HostTensor& src);
  /// assign_values_of(src) on logical elements [first, first + count) only: what the whole call
  /// sets there, for a caller splitting a large copy over threads by ranges (which write
  /// disjoint storage since no two elements share a position).
  /// @pre elements_distinct(), src.is_contiguous(), src.dtype() == dtype()
  void assign_values_of(const HostTensor& src, int64_t first, int64_t count);
  /// Logical element i = src's logical element i, bit for bit, for i < min(numel,
  /// src.numel()), in logical order (a later element overwrites an earlier one sharing its
  /// storage). @pre src.dtype() == dtype()
  void copy_elements_from(const HostTensor& src);

  /// A C ABI view of this tensor; valid while this tensor lives and is not moved.
  kcv_tensor view();

 private:
  DType dtype_ = DType::kF32;
  Shape shape_;
  std::vector<int64_t> strides_;
  int64_t storage_offset_ = 0;
  int64_t numel_ = 1;  // a default HostTensor is a scalar (shape {})
  int64_t storage_elems_ = 0;
  int64_t guard_elems_ = 0;
  int64_t address_shift_ = 0;
  int64_t elem_size_ = 4;
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

  struct NoFill {};
  HostTensor(DType dtype, Shape shape, std::vector<int64_t> strides, int64_t storage_offset,
             int64_t guard_elems, int64_t address_shift, NoFill);
  std::byte* storage() { return raw().data() + raw_storage_begin(); }
  const std::byte* storage() const { return raw().data() + raw_storage_begin(); }
  int64_t strided_index(int64_t i) const;
  /// fn(first logical index, its storage position, count, storage stride) for each innermost
  /// row of the view, in logical order (one row for a row-major view).
  template <typename Fn>
  void for_each_row(Fn&& fn) const;
  template <typename T>
  static T load(const std::byte* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  template <typename T>
  static void store(std::byte* p, T v) {
    std::memcpy(p, &v, sizeof v);
  }
};

/// The poison pattern a new HostTensor is filled with (guards, padding and elements): a quiet NaN
/// with the payload 0xDEAD.. for floating types, 0x5A5A.. for integers, 0x5A for bool.
uint64_t initial_fill_bits(DType dtype);

/// A tensor built from fp64 values, rounded to dtype, contiguous.
HostTensor make_tensor(DType dtype, const Shape& shape, const std::vector<double>& values);

}  // namespace kcv
