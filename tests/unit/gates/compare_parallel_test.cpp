// File: tests/unit/gates/compare_parallel_test.cpp
// The element comparison split over threads gives the serial loop's result exactly: counts,
// the worst element (the first index among ties, also across chunks), the ratios in index order
// and their quantiles, on outputs above the split threshold with NaN and Inf oracle values, NaN
// bounds, zero bounds, and NaN/Inf candidates. Also checked against a plain reference loop.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "gates/compare.hpp"
#include "unit/gates/synthetic.hpp"

namespace kcv::gates {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr Split kSerial{std::numeric_limits<std::size_t>::max(), 1};

/// ratio 8 exactly: |(1 + 2^-17) - 1| / 2^-20 (1 + 2^-17 is exact in fp32)
constexpr double kTieCandidate = 1.0 + 0x1p-17;
constexpr double kTieTau = 0x1p-20;

struct Case {
  OracleOutput oracle;
  CallRecord call;
};

/// n elements of ten decades within ~0.3 tau, with every kind of element the comparison skips or
/// treats specially sprinkled in, and `ties` elements at ratio 8 (or an infinite candidate, ratio
/// inf, when `inf_ties`): the largest ratio of the output.
Case make_case(std::size_t n, const std::vector<std::size_t>& ties, bool inf_ties, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> decade(-5.0, 5.0);
  std::uniform_real_distribution<double> noise(-0.3, 0.3);
  const double u = unit_roundoff(DType::kF32);
  Case c;
  c.oracle.dtype = DType::kF32;
  c.oracle.shape = Shape{static_cast<int64_t>(n)};
  c.oracle.value.resize(n);
  c.oracle.tau.resize(n);
  std::vector<double> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double y = static_cast<double>(static_cast<float>(std::pow(10.0, decade(rng))));
    const double tau = 4 * u * y;
    c.oracle.value[i] = y;
    c.oracle.tau[i] = tau;
    x[i] = y + noise(rng) * tau;
    if (i % 1009 == 3) c.oracle.value[i] = kNaN;  // not judged (EXC-01's)
    if (i % 4001 == 5) c.oracle.value[i] = -kInf;
    if (i % 3001 == 7) c.oracle.tau[i] = kNaN;
    if (i % 2003 == 11) c.oracle.tau[i] = 0, x[i] = y;  // exact: ratio 0
  }
  // Runs of skipped elements longer than a small chunk: whole chunks move down by different
  // amounts.
  for (std::size_t i = n / 3; i < n / 3 + 5000 && i < n; ++i) c.oracle.value[i] = kNaN;
  for (std::size_t i : ties) {
    c.oracle.value[i] = 1.0;
    c.oracle.tau[i] = kTieTau;
    x[i] = inf_ties ? (i % 2 == 0 ? kInf : kNaN) : kTieCandidate;
  }
  c.call = testing::call_of(DType::kF32, x);
  return c;
}

/// What compare_into must give, by the plainest loop.
struct Reference {
  Comparison c;
  std::vector<double> ratios;
};

Reference reference(const Case& k) {
  Reference r;
  const HostTensor& got = k.call.outputs.at(0);
  for (std::size_t i = 0; i < k.oracle.value.size(); ++i) {
    const double x = got.value_at(static_cast<int64_t>(i));
    const double ratio = element_ratio(k.oracle.dtype, x, k.oracle.value[i], k.oracle.tau[i]);
    if (std::isnan(ratio)) continue;
    r.ratios.push_back(ratio);
    ++r.c.judged;
    r.c.violations += ratio > 1;
    r.c.nonfinite += !std::isfinite(x);
    if (r.c.worst_index < 0 || ratio > r.c.worst_ratio) {
      r.c.worst_index = static_cast<int64_t>(i);
      r.c.worst_ratio = ratio;
    }
  }
  return r;
}

void expect_same(const Comparison& a, const Comparison& b) {
  EXPECT_EQ(a.judged, b.judged);
  EXPECT_EQ(a.violations, b.violations);
  EXPECT_EQ(a.nonfinite, b.nonfinite);
  EXPECT_EQ(a.worst_output, b.worst_output);
  EXPECT_EQ(a.worst_index, b.worst_index);
  EXPECT_EQ(a.worst_ratio, b.worst_ratio);
  // Bit patterns: a NaN candidate is equal to itself here.
  EXPECT_EQ(std::bit_cast<uint64_t>(a.candidate), std::bit_cast<uint64_t>(b.candidate));
  EXPECT_EQ(a.oracle, b.oracle);
  EXPECT_EQ(a.tau, b.tau);
  EXPECT_EQ(a.quantiles, b.quantiles);
}

// Above kParallelFrom with the default split (the machine's thread count) and with 3 and 7
// threads (uneven chunks): the same ratios in the same order, the same counts and quantiles,
// and the first of the tied worst elements, which sit in several chunks, the first of them not
// in chunk 0, and two inside one chunk.
TEST(CompareParallel, LargeOutputGivesTheSerialResult) {
  const std::size_t n = 3 * kParallelFrom + 12345;
  const std::vector<std::size_t> ties = {n / 2 + 17, n / 2 + 1000, n - 2, n / 7 * 6, n - 1};
  for (bool inf_ties : {false, true}) {
    SCOPED_TRACE(inf_ties ? "ties at ratio inf" : "ties at ratio 8");
    const Case k = make_case(n, ties, inf_ties, inf_ties ? 11 : 5);
    const Reference want = reference(k);
    ASSERT_EQ(want.c.worst_index, static_cast<int64_t>(n / 2 + 17));
    ASSERT_EQ(want.c.worst_ratio, inf_ties ? kInf : 8.0);
    ASSERT_GT(want.ratios.size(), std::size_t{1} << 20);  // quantiles by radix (compare.cpp)

    Comparison serial;
    std::vector<double> serial_ratios;
    compare_into(k.oracle, k.call.outputs[0], 0, serial, serial_ratios, kSerial);
    EXPECT_EQ(serial_ratios, want.ratios);
    EXPECT_EQ(serial.judged, want.c.judged);
    EXPECT_EQ(serial.violations, want.c.violations);
    EXPECT_EQ(serial.nonfinite, want.c.nonfinite);
    EXPECT_EQ(serial.worst_index, want.c.worst_index);
    EXPECT_EQ(serial.worst_ratio, want.c.worst_ratio);

    for (Split split : {Split{}, Split{kParallelFrom, 3}, Split{kParallelFrom, 7}}) {
      SCOPED_TRACE(split.threads);
      Comparison c;
      std::vector<double> ratios;
      compare_into(k.oracle, k.call.outputs[0], 0, c, ratios, split);
      EXPECT_EQ(ratios, want.ratios);
      expect_same(c, serial);
      expect_same(compare_output(k.oracle, k.call.outputs[0], 0, split),
                  compare_output(k.oracle, k.call.outputs[0], 0, kSerial));
    }
  }
}

// Many small chunks (a split forced below the threshold): ties that fall in different chunks,
// chunks with nothing judged, and a call of two outputs, the second appended to the first's
// ratios (its chunks move down from a nonzero base) and its worst element only strictly worse.
TEST(CompareParallel, ManyChunksAndSeveralOutputs) {
  const std::size_t n = 50'000;
  Case a = make_case(n, {700, 20'000, 49'999}, false, 3);
  Case b = make_case(n + 7, {123, 40'000}, false, 4);
  for (std::size_t i = 10'000; i < 30'000; ++i) b.oracle.value[i] = kNaN;  // whole chunks skipped
  OracleResult oracle;
  oracle.outputs = {a.oracle, b.oracle};
  CallRecord call;
  call.outputs = {a.call.outputs[0], b.call.outputs[0]};
  const Comparison serial = compare_call(oracle, call, kSerial);
  EXPECT_EQ(serial.worst_output, 0);  // b's ties equal a's: not strictly worse
  EXPECT_EQ(serial.worst_index, 700);
  for (unsigned threads : {2u, 5u, 8u, 64u}) {
    SCOPED_TRACE(threads);
    expect_same(compare_call(oracle, call, Split{1, threads}), serial);
    Comparison c, s;
    std::vector<double> ratios = {0.5}, serial_ratios = {0.5};
    compare_into(b.oracle, b.call.outputs[0], 1, c, ratios, Split{1, threads});
    compare_into(b.oracle, b.call.outputs[0], 1, s, serial_ratios, kSerial);
    EXPECT_EQ(ratios, serial_ratios);
    EXPECT_EQ(c.worst_index, 123);
  }
}

TEST(CompareParallel, ChunksCoverTheRangeInOrder) {
  for (std::size_t n : {1u, 2u, 7u, 64u, 1000u, 1001u}) {
    for (std::size_t chunks : {1u, 2u, 3u, 8u}) {
      if (chunks > n) continue;
      std::size_t next = 0;
      for (std::size_t k = 0; k < chunks; ++k) {
        const auto [begin, end] = chunk_range(n, chunks, k);
        EXPECT_EQ(begin, next);
        EXPECT_LE(end - begin, n / chunks + 1);
        EXPECT_GE(end - begin, n / chunks);
        next = end;
      }
      EXPECT_EQ(next, n);
    }
  }
  EXPECT_EQ(chunk_count(kParallelFrom - 1, Split{}), 1u);
  EXPECT_EQ(chunk_count(10, Split{1, 64}), 10u);
  EXPECT_LE(chunk_count(kParallelFrom, Split{}), kMaxJudgeThreads);
}

TEST(CompareParallel, AChunksExceptionReachesTheCaller) {
  std::vector<int> ran(4, 0);
  EXPECT_THROW(for_each_chunk(100, 4,
                              [&](std::size_t k, std::size_t, std::size_t) {
                                ran[k] = 1;
                                if (k == 2) throw std::runtime_error("chunk 2");
                              }),
               std::runtime_error);
  EXPECT_EQ(ran, (std::vector<int>{1, 1, 1, 1}));  // every chunk ran and was joined
}

}  // namespace
}  // namespace kcv::gates
