// File: python/src/core_tensor.cpp
// numpy <-> HostTensor. Arrays are read through numpy's __array_interface__ (data pointer,
// typestr, shape, byte strides), so any strided view works without a copy on the Python side:
// the view's element strides and its element offset from the start of its base ndarray become
// the HostTensor's strides and storage offset, and only the elements the view covers are copied
// (the rest of the storage is padding, which the executors fill and audit). Outputs come back as
// new contiguous numpy arrays.
#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "core_common.hpp"

namespace kcv::py {
namespace {

struct TypeName {
  std::string_view typestr;  // numpy's, little-endian host
  DType dtype;
  const char* numpy;
};

constexpr TypeName kTypes[] = {
    {"<f8", DType::kF64, "float64"}, {"<f4", DType::kF32, "float32"},
    {"<f2", DType::kF16, "float16"}, {"<u2", DType::kBF16, "uint16"},
    {"<i4", DType::kI32, "int32"},   {"<i8", DType::kI64, "int64"},
    {"|b1", DType::kBool, "bool"},
};

const char* numpy_name(DType t) {
  for (const TypeName& n : kTypes)
    if (n.dtype == t) return n.numpy;
  return "float32";
}

nb::object numpy() { return nb::module_::import_("numpy"); }

int64_t data_pointer(nb::handle array) {
  nb::dict iface = nb::cast<nb::dict>(array.attr("__array_interface__"));
  nb::tuple data = nb::cast<nb::tuple>(iface["data"]);
  return static_cast<int64_t>(nb::cast<uintptr_t>(data[0]));
}

/// Elements between the start of the outermost ndarray `array` is a view of and its element 0;
/// 0 when the bases are not ndarrays or the distance is not a whole number of elements.
int64_t base_offset(nb::handle array, int64_t ptr, int64_t itemsize) {
  nb::object ndarray = numpy().attr("ndarray");
  nb::object root = nb::borrow(array);
  for (int depth = 0; depth < 64; ++depth) {
    nb::object base = root.attr("base");
    if (base.is_none() || !nb::isinstance(base, ndarray)) break;
    root = base;
  }
  const int64_t bytes = ptr - data_pointer(root);
  if (bytes <= 0 || bytes % itemsize != 0) return 0;
  return bytes / itemsize;
}

// Copies the elements of the view: the source and destination use the same element strides.
void copy_view(const std::byte* src, std::byte* dst, const Shape& shape,
               const std::vector<int64_t>& strides, std::size_t itemsize, std::size_t dim) {
  if (dim == shape.size()) {
    std::memcpy(dst, src, itemsize);
    return;
  }
  const auto step =
      static_cast<std::ptrdiff_t>(strides[dim]) * static_cast<std::ptrdiff_t>(itemsize);
  if (dim + 1 == shape.size() && strides[dim] == 1) {
    std::memcpy(dst, src, static_cast<std::size_t>(shape[dim]) * itemsize);
    return;
  }
  for (int64_t i = 0; i < shape[dim]; ++i)
    copy_view(src + i * step, dst + i * step, shape, strides, itemsize, dim + 1);
}

}  // namespace

DType dtype_from_string(std::string_view name, std::string_view what) {
  auto t = parse_dtype(name);
  if (!t)
    raise_invalid(
        fmt::format("{}: unknown dtype '{}' (f64, f32, f16, bf16, i32, i64, bool)", what, name));
  return *t;
}

namespace {

const TypeName& type_of(nb::handle array, const nb::dict& iface, std::string_view what) {
  const std::string typestr = nb::cast<std::string>(iface["typestr"]);
  for (const TypeName& n : kTypes)
    if (n.typestr == typestr) return n;
  const std::string numpy_dtype = nb::cast<std::string>(array.attr("dtype").attr("name"));
  raise_invalid(
      fmt::format("{}: numpy dtype {} is not supported (float64, float32, float16, "
                  "uint16 = bf16 bits, int32, int64, bool)",
                  what, numpy_dtype));
}

Shape shape_of(const nb::dict& iface) {
  Shape shape;
  for (nb::handle d : nb::cast<nb::tuple>(iface["shape"])) shape.push_back(nb::cast<int64_t>(d));
  return shape;
}

}  // namespace

namespace {

/// An array's layout read under the GIL; `array` keeps its memory alive for the copy.
struct PendingCopy {
  nb::object array;
  DType dtype = DType::kF32;
  Shape shape;
  std::vector<int64_t> strides;
  int64_t ptr = 0;
  int64_t offset = 0;
};

PendingCopy prepare_copy(nb::handle obj, std::string_view what) {
  PendingCopy c;
  c.array = numpy().attr("asarray")(obj);
  nb::dict iface = nb::cast<nb::dict>(c.array.attr("__array_interface__"));
  c.dtype = type_of(c.array, iface, what).dtype;
  const auto itemsize = static_cast<int64_t>(dtype_size(c.dtype));
  c.shape = shape_of(iface);
  c.strides = contiguous_strides(c.shape);
  nb::object byte_strides = iface.contains("strides") ? nb::object(iface["strides"]) : nb::none();
  if (!byte_strides.is_none()) {
    std::size_t k = 0;
    for (nb::handle s : nb::cast<nb::tuple>(byte_strides)) {
      const auto bytes = nb::cast<int64_t>(s);
      if (bytes < 0)
        raise_invalid(fmt::format("{}: negative strides are not supported (pass a copy)", what));
      if (bytes % itemsize != 0)
        raise_invalid(
            fmt::format("{}: stride of {} bytes is not a whole number of {}-byte "
                        "elements",
                        what, bytes, itemsize));
      c.strides[k++] = bytes / itemsize;
    }
  }
  c.ptr = data_pointer(c.array);
  c.offset = base_offset(c.array, c.ptr, itemsize);
  return c;
}

/// Pure C++ (callable without the GIL while `c.array` is held).
HostTensor finish_copy(const PendingCopy& c) {
  HostTensor t(c.dtype, c.shape, c.strides, c.offset, /*guard_elems=*/0);
  if (t.numel() > 0) {
    copy_view(reinterpret_cast<const std::byte*>(static_cast<uintptr_t>(c.ptr)), t.data(), c.shape,
              c.strides, dtype_size(c.dtype), 0);
  }
  return t;
}

}  // namespace

HostTensor tensor_from_array(nb::handle obj, std::string_view what) {
  return finish_copy(prepare_copy(obj, what));
}

nb::object array_from_tensor(const HostTensor& tensor) {
  const HostTensor t = tensor.is_contiguous() ? HostTensor() : tensor.contiguous();
  const HostTensor& src = tensor.is_contiguous() ? tensor : t;
  nb::list shape;
  for (int64_t d : src.shape()) shape.append(d);
  nb::object out = numpy().attr("empty")(nb::tuple(shape), numpy_name(src.dtype()));
  const std::size_t bytes = static_cast<std::size_t>(src.numel()) * dtype_size(src.dtype());
  if (bytes > 0)
    std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(data_pointer(out))), src.data(),
                bytes);
  return out;
}

namespace {

/// Calls fn(array, "what[k] ('name')") for each (name, array) pair of a list.
template <typename Fn>
void for_each_pair(nb::handle pairs, std::string_view what, Fn&& fn) {
  std::size_t k = 0;
  for (nb::handle item : pairs) {
    nb::tuple pair = nb::cast<nb::tuple>(item);
    if (pair.size() != 2)
      raise_invalid(fmt::format("{}[{}]: expected a (name, array) pair", what, k));
    const std::string name = nb::cast<std::string>(pair[0]);
    fn(pair[1], fmt::format("{}[{}] ('{}')", what, k, name));
    ++k;
  }
}

}  // namespace

std::vector<HostTensor> tensors_from_pairs(nb::handle pairs, std::string_view what) {
  std::vector<PendingCopy> pending;
  for_each_pair(pairs, what, [&](nb::handle array, const std::string& where) {
    pending.push_back(prepare_copy(array, where));
  });
  // The copies (gigabytes for some KernelBench inputs) run without the GIL, so the audit's
  // other slots keep going; the arrays stay referenced by `pending` meanwhile.
  std::vector<HostTensor> out;
  out.reserve(pending.size());
  {
    nb::gil_scoped_release unlocked;
    for (const PendingCopy& c : pending) out.push_back(finish_copy(c));
  }
  return out;
}

std::vector<ArrayHeader> headers_from_pairs(nb::handle pairs, std::string_view what) {
  std::vector<ArrayHeader> out;
  for_each_pair(pairs, what, [&](nb::handle obj, const std::string& where) {
    nb::object array = numpy().attr("asarray")(obj);
    nb::dict iface = nb::cast<nb::dict>(array.attr("__array_interface__"));
    out.push_back({type_of(array, iface, where).dtype, shape_of(iface)});
  });
  return out;
}

}  // namespace kcv::py
