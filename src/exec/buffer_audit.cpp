// File: src/exec/buffer_audit.cpp
// Implementation of the shared buffer audit. Positions are reported relative to storage element
// 0: first_mutated_input_elem in elements, first_guard_violation in bytes, both negative inside
// the front guard; first_unwritten is a logical (row-major) output index. Only the first
// difference is reported; the flags say whether there was any.
#include "exec/buffer_audit.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "exec/sentinel.hpp"
#include "gates/parallel.hpp"
#include "kcv/rng.hpp"

namespace kcv::exec {
namespace {

constexpr uint64_t kGuardStreamBase = 0x4755415244ull << 24;  // "GUARD"

std::vector<std::byte> snapshot(const HostTensor& t) {
  const auto raw = t.raw();
  return {raw.begin(), raw.end()};
}

// Bytes [begin, end) of t.raw(): its storage's elements; the rest are its guard bands.
std::pair<std::size_t, std::size_t> element_bytes(const HostTensor& t) {
  const std::size_t begin = t.raw_storage_begin();
  return {begin, begin + static_cast<std::size_t>(t.storage_elems()) * dtype_size(t.dtype())};
}

CallBuffers::Guards guard_snapshot(const HostTensor& t) {
  const auto raw = t.raw();
  const auto [begin, end] = element_bytes(t);
  return {{raw.begin(), raw.begin() + static_cast<std::ptrdiff_t>(begin)},
          {raw.begin() + static_cast<std::ptrdiff_t>(std::min(end, raw.size())), raw.end()}};
}

// Bytes [begin, end) of raw() that the input's elements do not cover, as one or two ranges:
// the guards when the layout is dense (row-major from storage element 0), else all of raw().
std::vector<std::pair<std::size_t, std::size_t>> non_element_ranges(const HostTensor& t) {
  const std::size_t size = t.raw().size();
  if (!t.is_contiguous() || t.storage_offset() != 0) return {{0, size}};
  const auto [begin, end] = element_bytes(t);
  return {{0, begin}, {std::min(end, size), size}};
}

HostTensor copy_input(const HostTensor& src, std::size_t index, const CallOptions& o) {
  // The bytes the elements do not cover get the guard fill (a fixed pattern, random bits, or
  // zeros in plain mode), then the elements are copied: of a dense input only the guards are
  // filled, and large passes run on threads (byte_passes.hpp).
  HostTensor t(src.dtype(), src.shape(), src.strides(), src.storage_offset(),
               std::max(src.guard_elems(), kGuardElems), o.address_shift, FilledByCaller{});
  std::span<std::byte> raw = t.raw();
  const std::size_t size = dtype_size(src.dtype());
  const auto fill = [&](std::size_t begin, std::size_t end) {
    const std::span<std::byte> part = raw.subspan(begin, end - begin);
    if (!o.plain_buffers && o.randomize_guards)
      fill_random(part, begin, CounterRng(o.guard_seed, kGuardStreamBase + index));
    else
      fill_pattern(part, o.plain_buffers ? 0 : input_guard_bits(src.dtype()), size);
  };
  const auto ranges = non_element_ranges(t);
  for (const auto& [begin, end] : ranges) fill(begin, end);
  const auto [first, last] = element_bytes(t);
  if (ranges.size() == 2 && src.is_contiguous() && src.numel() == t.numel()) {
    copy_bytes(raw.subspan(first, last - first),
               std::span<const std::byte>(src.data(), last - first));
    return t;
  }
  if (ranges.size() == 2) fill(first, last);  // every byte filled before the elements' copy
  t.copy_elements_from(src);
  return t;
}

void audit_inputs(const CallBuffers& b, CallRecord& rec) {
  const bool compared = b.inputs_before.empty() && !b.input_first_difference.empty();
  for (std::size_t k = 0; k < b.inputs.size(); ++k) {
    const int64_t byte = compared ? b.input_first_difference[k]
                                  : first_difference(b.inputs[k].raw(), b.inputs_before[k]);
    if (byte < 0) continue;
    const auto size = static_cast<int64_t>(dtype_size(b.inputs[k].dtype()));
    const int64_t rel = byte - static_cast<int64_t>(b.inputs[k].raw_storage_begin());
    rec.inputs_unchanged = false;
    rec.mutated_input = static_cast<int>(k);
    rec.first_mutated_input_elem = rel >= 0 ? rel / size : (rel - size + 1) / size;  // floor
    return;
  }
}

void audit_output_guards(const CallBuffers& b, CallRecord& rec) {
  for (std::size_t k = 0; k < b.outputs.size(); ++k) {
    const HostTensor& t = b.outputs[k];
    const auto raw = t.raw();
    const auto [begin, end] = element_bytes(t);
    const CallBuffers::Guards& before = b.output_guards_before[k];
    int64_t j = first_difference(raw.first(begin), before.front);
    if (j < 0 && end < raw.size()) {
      j = first_difference(raw.subspan(end), before.back);
      if (j >= 0) j += static_cast<int64_t>(end);
    }
    if (j < 0) continue;
    rec.guards_intact = false;
    rec.first_guard_violation = j - static_cast<int64_t>(begin);
    return;
  }
}

// The first logical element of `t` whose bits equal `sentinel`, or -1: dense outputs (all of
// kcv's) as one typed scan.
template <typename S>
int64_t first_equal(const HostTensor& t, uint64_t sentinel) {
  const int64_t n = t.numel();
  if (!t.is_contiguous()) {
    for (int64_t i = 0; i < n; ++i)
      if (t.bits_at(i) == sentinel) return i;
    return -1;
  }
  const auto want = static_cast<S>(sentinel);
  if (static_cast<uint64_t>(want) != sentinel) return -1;  // wider than an element: never equal
  const std::byte* p = t.data();
  const auto scan = [&](int64_t begin, int64_t end) -> int64_t {
    for (int64_t i = begin; i < end; ++i) {
      S bits;
      std::memcpy(&bits, p + i * static_cast<int64_t>(sizeof(S)), sizeof(S));
      if (bits == want) return i;
    }
    return -1;
  };
  const auto elements = static_cast<std::size_t>(n);
  if (elements * sizeof(S) < kBytesInParallelFrom) return scan(0, n);
  // by ranges on threads; the earliest range's find is the serial scan's
  const std::size_t chunks = gates::chunk_count(elements, gates::Split{1, 0});
  std::vector<int64_t> found(chunks, -1);
  gates::for_each_chunk(elements, chunks, [&](std::size_t k, std::size_t begin, std::size_t end) {
    found[k] = scan(static_cast<int64_t>(begin), static_cast<int64_t>(end));
  });
  for (const int64_t i : found)
    if (i >= 0) return i;
  return -1;
}

void audit_unwritten(const CallBuffers& b, CallRecord& rec) {
  if (b.plain) return;  // zero-initialised outputs: an unwritten element is indistinguishable
  if (b.guards_only) return;  // never poisoned: written whole by a trusted worker
  for (std::size_t k = 0; k < b.outputs.size(); ++k) {
    const HostTensor& t = b.outputs[k];
    const uint64_t sentinel = b.output_sentinels[k];
    int64_t i = -1;
    switch (dtype_size(t.dtype())) {
      case 8:
        i = first_equal<uint64_t>(t, sentinel);
        break;
      case 4:
        i = first_equal<uint32_t>(t, sentinel);
        break;
      case 2:
        i = first_equal<uint16_t>(t, sentinel);
        break;
      default:
        i = first_equal<uint8_t>(t, sentinel);
        break;
    }
    if (i < 0) continue;
    rec.all_written = false;
    rec.first_unwritten = i;
    rec.unwritten_output = static_cast<int>(k);
    return;
  }
}

std::string dtype_text(int32_t code) {
  const bool known =
      code >= static_cast<int32_t>(DType::kF64) && code <= static_cast<int32_t>(DType::kBool);
  return known ? std::string(dtype_name(static_cast<DType>(code)))
               : fmt::format("dtype code {}", code);
}

std::string view_text(const kcv_tensor& v) {
  std::vector<int64_t> shape(v.shape, v.shape + std::max(v.ndim, 0));
  return fmt::format("{} [{}]", dtype_text(v.dtype), fmt::join(shape, ", "));
}

bool same_view(const kcv_tensor& a, const kcv_tensor& b) {
  if (a.data != b.data || a.dtype != b.dtype || a.ndim != b.ndim) return false;
  if (a.shape != b.shape || a.strides != b.strides) return false;
  return true;  // shape/strides point at kcv's own arrays, which the kernel cannot write (const)
}

}  // namespace

CallBuffers prepare_buffers(const std::vector<HostTensor>& inputs,
                            const std::vector<OutputSpec>& outputs, const CallOptions& options,
                            bool snapshot_inputs, OutputFill output_fill) {
  CallBuffers b;
  b.plain = options.plain_buffers;
  b.guards_only = output_fill == OutputFill::kGuardsOnly && !b.plain;
  b.inputs.reserve(inputs.size());
  for (std::size_t k = 0; k < inputs.size(); ++k)
    b.inputs.push_back(copy_input(inputs[k], k, options));
  b.outputs.reserve(outputs.size());
  for (const OutputSpec& spec : outputs) {
    // One seed, one sentinel per dtype: outputs of different dtypes each get a valid pattern.
    b.output_sentinels.push_back(b.plain ? 0 : sentinel_bits(spec.dtype, options.sentinel_seed));
    b.outputs.emplace_back(spec.dtype, spec.shape, kGuardElems, options.address_shift,
                           b.output_sentinels.back(), GuardsOnly{});
    if (!b.guards_only) {  // the elements hold the sentinel too (on threads when large)
      HostTensor& t = b.outputs.back();
      const auto [begin, end] = element_bytes(t);
      fill_pattern(t.raw().subspan(begin, end - begin), b.output_sentinels.back(),
                   dtype_size(spec.dtype));
    }
  }
  b.sentinel = b.output_sentinels.empty() ? 0 : b.output_sentinels.front();
  if (snapshot_inputs)
    for (const HostTensor& t : b.inputs) b.inputs_before.push_back(snapshot(t));
  for (const HostTensor& t : b.outputs) b.output_guards_before.push_back(guard_snapshot(t));
  for (HostTensor& t : b.inputs) b.input_views.push_back(t.view());
  for (HostTensor& t : b.outputs) b.output_views.push_back(t.view());
  b.output_views_made = b.output_views;
  return b;
}

void audit_buffers(const CallBuffers& b, CallRecord& rec) {
  audit_inputs(b, rec);
  audit_output_guards(b, rec);
  audit_unwritten(b, rec);
}

std::optional<std::string> check_output_views(const CallBuffers& b) {
  if (b.output_views.size() != b.output_views_made.size()) {
    return fmt::format("the kernel changed the number of outputs from {} to {}",
                       b.output_views_made.size(), b.output_views.size());
  }
  for (std::size_t k = 0; k < b.output_views.size(); ++k) {
    if (same_view(b.output_views[k], b.output_views_made[k])) continue;
    const kcv_tensor& now = b.output_views[k];
    const bool rank_ok = now.ndim >= 0 && now.ndim <= b.output_views_made[k].ndim;
    return fmt::format(
        "output {}: the kernel rewrote its view ({} -> {}); kcv allocates outputs with the "
        "op's shape and dtype and the kernel must fill them in place",
        k, view_text(b.output_views_made[k]),
        rank_ok && now.shape == b.output_views_made[k].shape
            ? view_text(now)
            : fmt::format("{} ndim {}", dtype_text(now.dtype), now.ndim));
  }
  return std::nullopt;
}

std::optional<std::string> check_declared_outputs(const Contract& contract,
                                                  const std::vector<OutputSpec>& outputs) {
  const std::vector<DType>& declared = contract.output_dtypes;
  if (declared.empty()) return std::nullopt;
  if (declared.size() != outputs.size()) {
    return fmt::format("the kernel's contract declares {} outputs; op '{}' has {}", declared.size(),
                       contract.op, outputs.size());
  }
  for (std::size_t k = 0; k < declared.size(); ++k) {
    if (declared[k] != outputs[k].dtype) {
      return fmt::format("output {}: the kernel's contract declares {}, the op requires {}", k,
                         dtype_name(declared[k]), dtype_name(outputs[k].dtype));
    }
  }
  return std::nullopt;
}

std::vector<std::span<std::byte>> raw_buffers(CallBuffers& b) {
  std::vector<std::span<std::byte>> spans;
  for (HostTensor& t : b.inputs) spans.push_back(t.raw());
  for (HostTensor& t : b.outputs) spans.push_back(t.raw());
  return spans;
}

}  // namespace kcv::exec
