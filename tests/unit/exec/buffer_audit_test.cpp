// File: tests/unit/exec/buffer_audit_test.cpp
// The shared buffer audit without a kernel: prepared inputs keep the caller's layout and get
// guard patterns in their guards and padding; the audit reports exact positions (elements for
// inputs, bytes for output guards, negative in front of storage).
#include "exec/buffer_audit.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "exec/sentinel.hpp"

namespace kcv::exec {
namespace {

HostTensor padded_input() {
  HostTensor t(DType::kF32, {2, 3}, {5, 1}, 2);  // rows of 3 in rows of 5, behind 2 elements
  for (int64_t i = 0; i < 6; ++i) t.set_value_at(i, static_cast<double>(i));
  return t;
}

TEST(BufferAudit, CopiesInputsWithTheirLayoutAndGuardsTheirPadding) {
  const CallBuffers b = prepare_buffers({padded_input()}, {}, CallOptions{});
  const HostTensor& t = b.inputs[0];
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{5, 1}));
  EXPECT_EQ(t.storage_offset(), 2);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(t.value_at(i), static_cast<double>(i));
  const std::vector<bool> covered = t.covered_storage();
  const auto* storage = reinterpret_cast<const uint32_t*>(t.raw().data() + t.raw_storage_begin());
  for (std::size_t j = 0; j < covered.size(); ++j) {
    if (!covered[j]) {
      EXPECT_EQ(storage[j], input_guard_bits(DType::kF32)) << "padding " << j;
    }
  }
  EXPECT_EQ(b.input_views[0].strides[0], 5);
}

TEST(BufferAudit, RandomGuardsDependOnTheSeedAndSpareTheElements) {
  CallOptions a, c;
  a.randomize_guards = c.randomize_guards = true;
  a.guard_seed = 1;
  c.guard_seed = 2;
  const CallBuffers ba = prepare_buffers({padded_input()}, {}, a);
  const CallBuffers bc = prepare_buffers({padded_input()}, {}, c);
  EXPECT_NE(ba.inputs_before[0], bc.inputs_before[0]);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(ba.inputs[0].bits_at(i), bc.inputs[0].bits_at(i));
}

TEST(BufferAudit, PoisonsEveryOutputByteWithTheSentinel) {
  CallOptions o;
  o.sentinel_seed = 3;
  const CallBuffers b = prepare_buffers({}, {{DType::kF16, {5}}}, o);
  const uint64_t s = sentinel_bits(DType::kF16, 3);
  const auto raw = b.outputs[0].raw();
  ASSERT_EQ(raw.size(), (5 + 2 * kGuardElems) * 2u);
  for (std::size_t j = 0; j < raw.size(); ++j)
    EXPECT_EQ(static_cast<uint64_t>(raw[j]), (s >> (8 * (j % 2))) & 0xFF) << j;
  EXPECT_EQ(b.sentinel, s);
}

TEST(BufferAudit, ReportsAFrontGuardWriteAsANegativeByteOffset) {
  CallBuffers b = prepare_buffers({}, {{DType::kF32, {4}}}, CallOptions{});
  b.outputs[0].raw()[b.outputs[0].raw_storage_begin() - 1] = std::byte{0};
  for (int64_t i = 0; i < 4; ++i) b.outputs[0].set_value_at(i, 1.0);
  CallRecord rec;
  audit_buffers(b, rec);
  EXPECT_FALSE(rec.guards_intact);
  EXPECT_EQ(rec.first_guard_violation, -1);
  EXPECT_TRUE(rec.all_written);
}

// Only the guard bands are kept from before the call (a copy of the whole output per call was
// an output-sized allocation for nothing), and a write to the very last guard byte still shows.
TEST(BufferAudit, KeepsTheOutputGuardsAndFindsAWriteToTheLastGuardByte) {
  CallBuffers b = prepare_buffers({}, {{DType::kF32, {4}}}, CallOptions{});
  const std::size_t begin = b.outputs[0].raw_storage_begin();
  const std::size_t end = begin + 4 * sizeof(float);
  const std::size_t size = b.outputs[0].raw().size();
  ASSERT_EQ(b.output_guards_before.size(), 1u);
  EXPECT_EQ(b.output_guards_before[0].front.size(), begin);
  EXPECT_EQ(b.output_guards_before[0].back.size(), size - end);
  for (int64_t i = 0; i < 4; ++i) b.outputs[0].set_value_at(i, 1.0);
  b.outputs[0].raw()[size - 1] ^= std::byte{1};
  CallRecord rec;
  audit_buffers(b, rec);
  EXPECT_FALSE(rec.guards_intact);
  EXPECT_EQ(rec.first_guard_violation, static_cast<int64_t>(size - 1 - begin));
}

TEST(BufferAudit, ReportsAnInputGuardWriteAsANegativeElement) {
  CallBuffers b = prepare_buffers({padded_input()}, {}, CallOptions{});
  b.inputs[0].raw()[b.inputs[0].raw_storage_begin() - 3] = std::byte{0};  // inside element -1
  CallRecord rec;
  audit_buffers(b, rec);
  EXPECT_FALSE(rec.inputs_unchanged);
  EXPECT_EQ(rec.mutated_input, 0);
  EXPECT_EQ(rec.first_mutated_input_elem, -1);
}

TEST(BufferAudit, ChecksDeclaredOutputsAgainstTheOp) {
  Contract c;
  c.op = "argmax";
  EXPECT_EQ(check_declared_outputs(c, {{DType::kI64, {4}}}), std::nullopt);  // nothing declared
  c.output_dtypes = {DType::kI64, DType::kF32};
  EXPECT_EQ(
      check_declared_outputs(c, {{DType::kI64, {4}}}),
      std::optional<std::string>("the kernel's contract declares 2 outputs; op 'argmax' has 1"));
}

// first_difference compares in blocks: the first differing byte is found wherever it lies (at
// either end of a block, of the span, or in a span shorter than a block), as std::mismatch.
TEST(BufferAudit, FirstDifferenceIsTheFirstMismatchingByte) {
  for (std::size_t n : {0u, 1u, 7u, 4095u, 4096u, 4097u, 8192u, 12289u}) {
    std::vector<std::byte> a(n), b(n);
    for (std::size_t j = 0; j < n; ++j) a[j] = b[j] = static_cast<std::byte>(j * 7 + 1);
    EXPECT_EQ(first_difference(a, b), -1) << n;
    for (std::size_t at : {std::size_t{0}, std::size_t{1}, std::size_t{4095}, std::size_t{4096},
                           std::size_t{4097}, n / 2, n - 1}) {
      if (at >= n) continue;
      std::vector<std::byte> c = b;
      c[at] ^= std::byte{0x10};
      if (at + 5 < n) c[at + 5] ^= std::byte{1};  // a later difference does not count
      const auto want =
          static_cast<int64_t>(std::mismatch(a.begin(), a.end(), c.begin()).first - a.begin());
      EXPECT_EQ(first_difference(a, c), want) << n << " " << at;
      EXPECT_EQ(first_difference(a, c), static_cast<int64_t>(at)) << n << " " << at;
    }
  }
}

// The unwritten-element scan of every element size finds the first element left at the
// sentinel; a value equal to the sentinel's low bytes only is written.
TEST(BufferAudit, FindsTheFirstUnwrittenElementOfEveryDtype) {
  for (DType t : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kI32, DType::kI64,
                  DType::kBool}) {
    CallOptions o;
    o.sentinel_seed = 5;
    CallBuffers b = prepare_buffers({}, {{t, {3, 70}}}, o);
    const uint64_t s = b.output_sentinels[0];
    HostTensor& out = b.outputs[0];
    for (int64_t i = 0; i < out.numel(); ++i) out.set_bits_at(i, s ^ 1);
    CallRecord all;
    audit_buffers(b, all);
    EXPECT_TRUE(all.all_written) << dtype_name(t);
    out.set_bits_at(137, s);
    out.set_bits_at(200, s);
    CallRecord rec;
    audit_buffers(b, rec);
    EXPECT_FALSE(rec.all_written) << dtype_name(t);
    EXPECT_EQ(rec.first_unwritten, 137) << dtype_name(t);
    EXPECT_EQ(rec.unwritten_output, 0);
  }
}

}  // namespace
}  // namespace kcv::exec
