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

void fill_random(HostTensor& t, uint64_t seed, uint64_t stream) {
  const CounterRng rng(seed, stream);
  std::span<std::byte> raw = t.raw();
  for (std::size_t j = 0; j < raw.size(); j += 8) {
    const uint64_t bits = rng.bits(j / 8);
    std::memcpy(raw.data() + j, &bits, std::min<std::size_t>(8, raw.size() - j));
  }
}

HostTensor copy_input(const HostTensor& src, std::size_t index, const CallOptions& o) {
  // Allocated with the fill it gets (one pass over the buffer, not two), then the elements.
  const uint64_t fill = o.plain_buffers || o.randomize_guards ? 0 : input_guard_bits(src.dtype());
  HostTensor t(src.dtype(), src.shape(), src.strides(), src.storage_offset(),
               std::max(src.guard_elems(), kGuardElems), o.address_shift, fill);
  if (!o.plain_buffers && o.randomize_guards)
    fill_random(t, o.guard_seed, kGuardStreamBase + index);
  t.copy_elements_from(src);  // same layout on both sides: one block when dense
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
  for (int64_t i = 0; i < n; ++i) {
    S bits;
    std::memcpy(&bits, p + i * static_cast<int64_t>(sizeof(S)), sizeof(S));
    if (bits == want) return i;
  }
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

int64_t first_difference(std::span<const std::byte> now, std::span<const std::byte> before) {
  // memcmp over blocks (vectorized in libc; the byte loop of std::mismatch is several times
  // slower on the inputs of every call), then the block that differs byte by byte.
  constexpr std::size_t kBlock = 4096;
  for (std::size_t at = 0; at < now.size(); at += kBlock) {
    const std::size_t n = std::min(kBlock, now.size() - at);
    if (std::memcmp(now.data() + at, before.data() + at, n) == 0) continue;
    const auto mismatch = std::mismatch(now.begin() + static_cast<std::ptrdiff_t>(at),
                                        now.begin() + static_cast<std::ptrdiff_t>(at + n),
                                        before.begin() + static_cast<std::ptrdiff_t>(at));
    return static_cast<int64_t>(mismatch.first - now.begin());
  }
  return -1;
}

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
    if (b.guards_only) {
      b.outputs.emplace_back(spec.dtype, spec.shape, kGuardElems, options.address_shift,
                             b.output_sentinels.back(), GuardsOnly{});
    } else {
      b.outputs.emplace_back(spec.dtype, spec.shape, std::vector<int64_t>{}, 0, kGuardElems,
                             options.address_shift, b.output_sentinels.back());
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
