// File: python/src/core_common.hpp
// Shared pieces of the kcv._core bindings (python/src/core_*.cpp, one job per file): dtype
// strings, numpy <-> HostTensor conversion honouring strides and base offsets, JSON <-> Python
// through the json module, and the error mapping (a kcv Error becomes the kcv._core exception
// class of its code, core_errors.cpp). Each core_*.cpp defines one bind_* function that
// core_module.cpp calls.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>  // every file casts strings: one caster everywhere (ODR)

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kcv/dtype.hpp"
#include "kcv/expected.hpp"
#include "kcv/tensor.hpp"

namespace kcv::py {

namespace nb = nanobind;

/// Raises the kcv._core exception class of e.code (core_errors.cpp), its message prefixed with
/// `what` when given.
[[noreturn]] void raise(const Error& e, std::string_view what = {});

/// Raises kcv._core.InvalidArgumentError (also a ValueError) with this message.
[[noreturn]] void raise_invalid(const std::string& message);

/// "f64" ... "bool" (also the torch spellings) -> DType; ValueError naming `what` otherwise.
DType dtype_from_string(std::string_view name, std::string_view what);

/// A copy of a numpy array (or anything numpy.asarray takes) as a HostTensor with the array's
/// layout: its strides (0 = broadcast allowed; negative ones raise ValueError) and its offset
/// from the start of its base ndarray become the tensor's strides and storage offset, so a
/// strided or offset view reaches the kernel as that view. No guard elements (executors add
/// their own). bf16 travels as uint16 bit patterns. `what` names the argument in errors.
HostTensor tensor_from_array(nb::handle array, std::string_view what);

/// A new contiguous numpy array with the tensor's logical contents (bf16 as uint16).
nb::object array_from_tensor(const HostTensor& t);

/// A list of (name, array) pairs -> HostTensors (names only for error messages).
std::vector<HostTensor> tensors_from_pairs(nb::handle pairs, std::string_view what);

/// What an array is without its elements: dtype and shape, read from its array interface.
struct ArrayHeader {
  DType dtype = DType::kF32;
  Shape shape;
};

/// The headers of a list of (name, array) pairs: no element is copied (a judge that never reads
/// input values needs only these, and a KernelBench input can be gigabytes).
std::vector<ArrayHeader> headers_from_pairs(nb::handle pairs, std::string_view what);

/// json.dumps(obj) / json.loads(text).
std::string to_json_text(nb::handle obj);
nb::object from_json_text(const std::string& text);

}  // namespace kcv::py
