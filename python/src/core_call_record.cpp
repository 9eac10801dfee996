// File: python/src/core_call_record.cpp
// kcv._core.CallRecord: one audited candidate call (include/kcv/call.hpp) as the Worker returns
// it and the judges take it. Outputs convert to new contiguous numpy arrays on every read, or
// are taken out once without a copy (take_outputs: the arrays own the record's buffers); the
// keyword constructor lets Python build synthetic records (tests, replayed results) from arrays.
#include <fmt/format.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <array>

#include "core_common.hpp"
#include "kcv/call.hpp"

namespace kcv::py {
namespace {

constexpr std::array<CallStatus, 6> kStatuses = {CallStatus::kOk,        CallStatus::kKernelError,
                                                 CallStatus::kException, CallStatus::kCrash,
                                                 CallStatus::kTimeout,   CallStatus::kBadOutput};

CallStatus status_from_string(std::string_view name) {
  for (CallStatus s : kStatuses)
    if (call_status_name(s) == name) return s;
  raise_invalid(
      fmt::format("status: unknown call status '{}' (ok, kernel_error, exception, "
                  "crash, timeout, bad_output)",
                  name));
}

nb::list outputs_of(const CallRecord& r) {
  nb::list out;
  for (const HostTensor& t : r.outputs) out.append(array_from_tensor(t));
  return out;
}

nb::dlpack::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::kF64:
      return nb::dtype<double>();
    case DType::kF32:
      return nb::dtype<float>();
    case DType::kF16:
      return nb::dlpack::dtype{static_cast<uint8_t>(nb::dlpack::dtype_code::Float), 16, 1};
    case DType::kBF16:  // its bits, as everywhere in kcv._core
      return nb::dtype<uint16_t>();
    case DType::kI32:
      return nb::dtype<int32_t>();
    case DType::kI64:
      return nb::dtype<int64_t>();
    case DType::kBool:
      return nb::dtype<bool>();
  }
  return nb::dtype<uint8_t>();
}

/// The outputs as numpy arrays over the record's own buffers (contiguous ones are moved, not
/// copied); the record keeps none. Never while another thread judges the record:
/// kcv._core.judge reads its buffers in place without the GIL (the audit takes the outputs of
/// the trusted runs and of the replica's trials, which no gate judges).
nb::list take_outputs(CallRecord& r) {
  nb::list out;
  for (HostTensor& t : r.outputs) {
    auto* owned = new HostTensor(t.is_contiguous() ? std::move(t) : t.contiguous());
    nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<HostTensor*>(p); });
    std::vector<std::size_t> shape(owned->shape().begin(), owned->shape().end());
    out.append(nb::ndarray<nb::numpy>(owned->data(), shape.size(), shape.data(), owner, nullptr,
                                      numpy_dtype(owned->dtype()))
                   .cast());
  }
  r.outputs.clear();
  return out;
}

void set_outputs(CallRecord& r, nb::handle arrays) {
  std::vector<HostTensor> outputs;
  std::size_t k = 0;
  for (nb::handle a : arrays)
    outputs.push_back(tensor_from_array(a, fmt::format("outputs[{}]", k++)));
  r.outputs = std::move(outputs);
}

}  // namespace

void bind_call_record(nb::module_& m) {
  nb::class_<CallRecord>(m, "CallRecord",
                         "One audited candidate call: status, outputs and the buffer audit.")
      .def(
          "__init__",
          [](CallRecord* r, const std::string& status, nb::handle outputs,
             const std::string& message, bool inputs_unchanged, int mutated_input,
             int64_t first_mutated_input_elem, bool guards_intact, int64_t first_guard_violation,
             bool all_written, int64_t first_unwritten, int unwritten_output, uint64_t sentinel) {
            const CallStatus s = status_from_string(status);
            new (r) CallRecord();
            r->status = s;
            r->message = message;
            r->inputs_unchanged = inputs_unchanged;
            r->mutated_input = mutated_input;
            r->first_mutated_input_elem = first_mutated_input_elem;
            r->guards_intact = guards_intact;
            r->first_guard_violation = first_guard_violation;
            r->all_written = all_written;
            r->first_unwritten = first_unwritten;
            r->unwritten_output = unwritten_output;
            r->sentinel = sentinel;
            set_outputs(*r, outputs);
          },
          nb::kw_only(), nb::arg("status") = "ok", nb::arg("outputs") = nb::list(),
          nb::arg("message") = "", nb::arg("inputs_unchanged") = true,
          nb::arg("mutated_input") = -1, nb::arg("first_mutated_input_elem") = -1,
          nb::arg("guards_intact") = true, nb::arg("first_guard_violation") = -1,
          nb::arg("all_written") = true, nb::arg("first_unwritten") = -1,
          nb::arg("unwritten_output") = -1, nb::arg("sentinel") = 0)
      .def_prop_rw(
          "status", [](const CallRecord& r) { return std::string(call_status_name(r.status)); },
          [](CallRecord& r, const std::string& s) { r.status = status_from_string(s); })
      .def_rw("message", &CallRecord::message)
      .def_prop_rw("outputs", &outputs_of, &set_outputs,
                   "Contiguous numpy arrays (a new copy on every read; bf16 as uint16 bits).")
      .def("take_outputs", &take_outputs,
           "The outputs as contiguous numpy arrays that take over the record's buffers, without "
           "a copy; the record is left with none. Not while another thread judges the record.")
      .def_rw("inputs_unchanged", &CallRecord::inputs_unchanged)
      .def_rw("mutated_input", &CallRecord::mutated_input)
      .def_rw("first_mutated_input_elem", &CallRecord::first_mutated_input_elem)
      .def_rw("guards_intact", &CallRecord::guards_intact)
      .def_rw("first_guard_violation", &CallRecord::first_guard_violation)
      .def_rw("all_written", &CallRecord::all_written)
      .def_rw("first_unwritten", &CallRecord::first_unwritten)
      .def_rw("unwritten_output", &CallRecord::unwritten_output)
      .def_rw("sentinel", &CallRecord::sentinel)
      .def_prop_rw(
          "launch",
          [](const CallRecord& r) { return std::make_tuple(r.launch.block, r.launch.threads); },
          [](CallRecord& r, std::tuple<int32_t, int32_t> l) {
            r.launch = LaunchConfig{std::get<0>(l), std::get<1>(l)};
          },
          "(block, threads) of the call.")
      .def("__repr__", [](const CallRecord& r) {
        std::string s = fmt::format("CallRecord(status={}, outputs={}", call_status_name(r.status),
                                    r.outputs.size());
        if (!r.inputs_unchanged) s += fmt::format(", mutated_input={}", r.mutated_input);
        if (!r.guards_intact) s += ", guards_intact=False";
        if (!r.all_written) s += ", all_written=False";
        if (!r.message.empty()) s += fmt::format(", message='{}'", r.message.substr(0, 200));
        return s + ")";
      });
}

}  // namespace kcv::py
