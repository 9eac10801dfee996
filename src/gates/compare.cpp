// File: src/gates/compare.cpp
// Element ratios and their distribution. Quantiles are nearest-rank (nth_element), so
// a ratio of inf is simply the largest value; ties for the worst element keep the first index,
// which makes evidence deterministic.
#include "gates/compare.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

namespace kcv::gates {

namespace {

/// Index (0-based) of the nearest-rank q-quantile among n values.
std::size_t nearest_rank_index(std::size_t n, double q) {
  auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(n)));
  return std::clamp<std::size_t>(k, 1, n) - 1;
}

}  // namespace

TauFloor::TauFloor(DType out_dtype) : dtype_(out_dtype), floating_(is_floating(out_dtype)) {
  if (!floating_) return;
  // ulp at 1.0 is 2^-mant_bits: its biased fp64 exponent is 1023 - mant_bits
  mant_bits_ = 1023 - static_cast<int64_t>(std::bit_cast<uint64_t>(ulp_of(out_dtype, 1.0)) >> 52);
  min_normal_ = min_normal(out_dtype);
  min_ulp_ = ulp_of(out_dtype, 0.0);
}

double element_ratio(DType out_dtype, double candidate, double oracle, double tau) {
  return element_ratio(TauFloor(out_dtype), candidate, oracle, tau);
}

double effective_tau(DType out_dtype, double oracle, double tau) {
  return TauFloor(out_dtype)(oracle, tau);
}

namespace {

constexpr std::array<double, 3> kRanks = {0.5, 0.9, 0.99};

/// nth_element leaves every value at or above rank k from k on, so each higher rank is searched
/// only there: about n + n/2 + n/10 steps instead of 3n.
std::vector<double> quantiles_by_selection(std::vector<double>& ratios) {
  std::vector<double> q;
  auto from = ratios.begin();
  for (double p : kRanks) {
    const auto at =
        ratios.begin() + static_cast<std::ptrdiff_t>(nearest_rank_index(ratios.size(), p));
    std::nth_element(from, at, ratios.end());
    q.push_back(*at);
    from = at;
  }
  q.push_back(*std::max_element(from, ratios.end()));
  return q;
}

/// The same ranks by radix selection, for outputs of millions of elements (the judges run this
/// on every call of every probe): a ratio is >= 0 (or +inf), so its bit pattern orders as an
/// unsigned integer. One pass counts the top kRadixBits of every pattern; the bucket holding each
/// rank is then found from the counts, and only those buckets' members are selected among. Two
/// streaming passes instead of nth_element's shuffling of the whole array, each on several threads
/// for a large array (counts add up, and a rank's value does not depend on the order its bucket's
/// members are gathered in, so the result is the serial passes').
constexpr int kRadixBits = 18;  // sign, 11 exponent bits, 6 mantissa bits: 64 buckets a binade
constexpr std::size_t kRadixBuckets = std::size_t{1} << kRadixBits;

struct RadixCounts {
  std::vector<uint64_t> count;  // empty until the part's first element
  double max = 0;
  bool negative = false;
};

struct RadixMembers {
  std::array<std::vector<double>, kRanks.size()> of_rank;
};

std::optional<std::vector<double>> quantiles_by_radix(const std::vector<double>& ratios,
                                                      Split split) {
  const auto bucket_of = [](double r) { return std::bit_cast<uint64_t>(r) >> (64 - kRadixBits); };
  const std::size_t n = ratios.size();
  RadixCounts counts;
  reduce_chunks(
      n, split, counts,
      [&](std::size_t begin, std::size_t end, RadixCounts& part) {
        if (part.count.empty()) part.count.assign(kRadixBuckets, 0);
        for (std::size_t i = begin; i < end; ++i) {
          const double r = ratios[i];
          part.negative = part.negative || std::signbit(r);
          ++part.count[bucket_of(r)];
          part.max = std::max(part.max, r);
        }
      },
      [](RadixCounts& total, const RadixCounts& part) {
        if (total.count.empty()) total.count.assign(kRadixBuckets, 0);
        for (std::size_t b = 0; b < part.count.size(); ++b) total.count[b] += part.count[b];
        total.max = std::max(total.max, part.max);
        total.negative = total.negative || part.negative;
      });
  if (counts.negative) return std::nullopt;  // never made by element_ratio; breaks the order
  const std::vector<uint64_t>& count = counts.count;
  // Each rank's bucket and its place within the bucket.
  std::array<uint64_t, kRanks.size()> bucket{};
  std::array<std::size_t, kRanks.size()> within{};
  std::size_t k = 0, below = 0;
  for (std::size_t b = 0; b < count.size() && k < kRanks.size(); ++b) {
    while (k < kRanks.size() && nearest_rank_index(n, kRanks[k]) < below + count[b]) {
      bucket[k] = b;
      within[k] = nearest_rank_index(n, kRanks[k]) - below;
      ++k;
    }
    below += count[b];
  }
  // The members of those buckets (at most three, often fewer), gathered in one pass: the first
  // rank of each distinct bucket owns its members.
  const auto owns = [&](std::size_t i) { return i == 0 || bucket[i] != bucket[i - 1]; };
  RadixMembers members;
  for (std::size_t i = 0; i < kRanks.size(); ++i)
    if (owns(i)) members.of_rank[i].reserve(count[bucket[i]]);
  reduce_chunks(
      n, split, members,
      [&](std::size_t begin, std::size_t end, RadixMembers& part) {
        for (std::size_t j = begin; j < end; ++j) {
          const double r = ratios[j];
          const uint64_t b = bucket_of(r);
          for (std::size_t i = 0; i < kRanks.size(); ++i) {
            if (b == bucket[i] && owns(i)) {
              part.of_rank[i].push_back(r);
              break;
            }
          }
        }
      },
      [](RadixMembers& total, const RadixMembers& part) {
        for (std::size_t i = 0; i < kRanks.size(); ++i)
          total.of_rank[i].insert(total.of_rank[i].end(), part.of_rank[i].begin(),
                                  part.of_rank[i].end());
      });
  std::vector<double> q;
  std::size_t owner = 0;  // the rank whose vector holds this bucket's members
  for (std::size_t i = 0; i < kRanks.size(); ++i) {
    if (owns(i)) owner = i;
    std::vector<double>& m = members.of_rank[owner];
    const auto at = m.begin() + static_cast<std::ptrdiff_t>(within[i]);
    std::nth_element(m.begin(), at, m.end());
    q.push_back(*at);
  }
  q.push_back(counts.max);
  return q;
}

constexpr std::size_t kRadixFrom = std::size_t{1} << 20;  // below: selection is as fast

}  // namespace

std::vector<double> ratio_quantiles(std::vector<double> ratios) {
  return ratio_quantiles_in_place(ratios);
}

std::vector<double> ratio_quantiles_in_place(std::vector<double>& ratios) {
  if (ratios.empty()) return {};
  if (ratios.size() >= kRadixFrom) {
    if (std::optional<std::vector<double>> q = quantiles_by_radix(ratios, Split{})) return *q;
  }
  return quantiles_by_selection(ratios);
}

namespace {

/// The tensor's elements in logical order as doubles, read one at a time (no copy of the whole
/// output: the judges run over outputs of hundreds of millions of elements): a dense fp64 output
/// directly, a normal fp32 value through the hardware conversion, anything else (subnormals,
/// which DAZ would read as 0; NaN payloads; other dtypes) through value_at.
class ValueReader {
 public:
  explicit ValueReader(const HostTensor& t)
      : t_(t),
        p_(t.data()),
        dense_f64_(t.is_contiguous() && t.dtype() == DType::kF64),
        dense_f32_(t.is_contiguous() && t.dtype() == DType::kF32) {}

  double operator()(std::size_t i) const {
    if (dense_f64_) {
      double v;
      std::memcpy(&v, p_ + i * sizeof v, sizeof v);
      return v;
    }
    if (dense_f32_) {
      uint32_t bits;
      std::memcpy(&bits, p_ + i * sizeof bits, sizeof bits);
      const uint32_t exponent = (bits >> 23) & 0xFFu;
      if (exponent != 0 && exponent != 0xFFu)
        return static_cast<double>(std::bit_cast<float>(bits));
    }
    return t_.value_at(static_cast<int64_t>(i));
  }

 private:
  const HostTensor& t_;
  const std::byte* p_;
  bool dense_f64_;
  bool dense_f32_;
};

/// The elements [begin, end) of one output: counts and worst element into `c` (ties keep the
/// first index), each ratio to `emit` in index order (NaN ratios skipped).
template <class Emit>
void compare_range(const OracleOutput& o, const ValueReader& value_of, const TauFloor& floor,
                   int output, std::size_t begin, std::size_t end, Comparison& c, Emit&& emit) {
  for (std::size_t i = begin; i < end; ++i) {
    const double y = o.value[i];
    const double x = value_of(i);
    const double r = element_ratio(floor, x, y, o.tau[i]);
    if (std::isnan(r)) continue;
    ++c.judged;
    emit(r);
    if (r > 1) ++c.violations;
    if (!std::isfinite(x)) ++c.nonfinite;
    if (c.worst_index < 0 || r > c.worst_ratio) {
      c.worst_output = output;
      c.worst_index = static_cast<int64_t>(i);
      c.worst_ratio = r;
      c.candidate = x;
      c.oracle = y;
      c.tau = o.tau[i];
    }
  }
}

}  // namespace

void merge_into(Comparison& c, const Comparison& part) {
  c.judged += part.judged;
  c.violations += part.violations;
  c.nonfinite += part.nonfinite;
  if (part.worst_index < 0 || (c.worst_index >= 0 && !(part.worst_ratio > c.worst_ratio))) return;
  c.worst_output = part.worst_output;
  c.worst_index = part.worst_index;
  c.worst_ratio = part.worst_ratio;
  c.candidate = part.candidate;
  c.oracle = part.oracle;
  c.tau = part.tau;
}

void compare_into(const OracleOutput& o, const HostTensor& got, int output, Comparison& c,
                  std::vector<double>& ratios, Split split) {
  const std::size_t n = o.value.size();
  const ValueReader value_of(got);
  const TauFloor floor(o.dtype);
  const std::size_t chunks = chunk_count(n, split);
  if (chunks == 1) {
    compare_range(o, value_of, floor, output, 0, n, c, [&](double r) { ratios.push_back(r); });
    return;
  }
  // Each chunk writes its ratios from the position of its first element on; the chunks' ratios
  // are then moved down over the skipped (NaN) places in chunk order: the serial loop's vector,
  // with no second copy of it.
  const std::size_t base = ratios.size();
  ratios.resize(base + n);
  std::vector<Comparison> parts(chunks);
  for_each_chunk(n, chunks, [&](std::size_t k, std::size_t begin, std::size_t end) {
    double* out = ratios.data() + base + begin;
    compare_range(o, value_of, floor, output, begin, end, parts[k], [&](double r) { *out++ = r; });
  });
  double* at = ratios.data() + base;
  for (std::size_t k = 0; k < chunks; ++k) {
    const double* from = ratios.data() + base + chunk_range(n, chunks, k).first;
    const auto count = static_cast<std::size_t>(parts[k].judged);
    if (at != from) std::copy(from, from + count, at);  // at < from: a forward copy is safe
    at += count;
    merge_into(c, parts[k]);
  }
  ratios.resize(static_cast<std::size_t>(at - ratios.data()));
}

namespace {

thread_local RatioScratch* innermost_scratch = nullptr;

// The ratio array of one comparison: the thread's scratch array, emptied, or a fresh one.
class Ratios {
 public:
  explicit Ratios(std::size_t total)
      : v_(RatioScratch::current() != nullptr ? *RatioScratch::current() : own_) {
    v_.clear();
    v_.reserve(total);
  }
  std::vector<double>& get() { return v_; }

 private:
  std::vector<double> own_;
  std::vector<double>& v_;
};

}  // namespace

RatioScratch::RatioScratch() : outer_(innermost_scratch) { innermost_scratch = this; }
RatioScratch::~RatioScratch() { innermost_scratch = outer_; }
std::vector<double>* RatioScratch::current() {
  return innermost_scratch != nullptr ? &innermost_scratch->ratios_ : nullptr;
}

Comparison compare_output(const OracleOutput& oracle, const HostTensor& candidate, int output,
                          Split split) {
  Comparison c;
  Ratios ratios(oracle.value.size());
  compare_into(oracle, candidate, output, c, ratios.get(), split);
  c.quantiles = ratio_quantiles_in_place(ratios.get());
  return c;
}

namespace {

thread_local ComparisonMemo* innermost_memo = nullptr;

}  // namespace

ComparisonMemo::ComparisonMemo(const std::vector<CallRecord>& calls)
    : calls_(calls), outer_(innermost_memo) {
  innermost_memo = this;
}
ComparisonMemo::~ComparisonMemo() { innermost_memo = outer_; }
ComparisonMemo* ComparisonMemo::current() { return innermost_memo; }

void ComparisonMemo::hold(std::shared_ptr<const OracleResult> result) {
  if (result == nullptr || held(*result) != nullptr) return;
  held_.push_back(Held{std::move(result), std::vector<std::optional<Comparison>>(calls_.size())});
}

ComparisonMemo::Held* ComparisonMemo::held(const OracleResult& oracle) {
  for (Held& h : held_)
    if (h.result.get() == &oracle) return &h;
  return nullptr;
}

std::optional<std::size_t> ComparisonMemo::call_index(const CallRecord& call) const {
  // By address within the outcome's vector: a copy of a call, or a call made by a judge, is
  // another object and is compared afresh.
  for (std::size_t k = 0; k < calls_.size(); ++k)
    if (&calls_[k] == &call) return k;
  return std::nullopt;
}

const Comparison* ComparisonMemo::find(const OracleResult& oracle, const CallRecord& call) {
  Held* h = held(oracle);
  const std::optional<std::size_t> k = h != nullptr ? call_index(call) : std::nullopt;
  return k && h->by_call[*k] ? &*h->by_call[*k] : nullptr;
}

void ComparisonMemo::remember(const OracleResult& oracle, const CallRecord& call,
                              const Comparison& c) {
  Held* h = held(oracle);
  const std::optional<std::size_t> k = h != nullptr ? call_index(call) : std::nullopt;
  if (k) h->by_call[*k] = c;
}

bool ComparisonMemo::covers(const OracleResult* oracle, const CallsView& calls) {
  if (oracle != nullptr && held(*oracle) == nullptr) return false;
  if (calls.size() != calls_.size()) return false;
  std::size_t k = 0;
  for (const CallRecord& call : calls) {
    if (&call != &calls_[k]) return false;
    ++k;
  }
  return true;
}

Comparison compare_call(const OracleResult& oracle, const CallRecord& call, Split split) {
  ComparisonMemo* memo = ComparisonMemo::current();
  if (memo != nullptr) {
    if (const Comparison* known = memo->find(oracle, call)) return *known;
  }
  Comparison c;
  std::size_t total = 0;
  for (const OracleOutput& o : oracle.outputs) total += o.value.size();
  Ratios ratios(total);
  for (std::size_t o = 0; o < oracle.outputs.size(); ++o) {
    compare_into(oracle.outputs[o], call.outputs[o], static_cast<int>(o), c, ratios.get(), split);
  }
  c.quantiles = ratio_quantiles_in_place(ratios.get());
  if (memo != nullptr) memo->remember(oracle, call, c);
  return c;
}

bool outputs_match(const OracleResult& oracle, const CallRecord& call) {
  if (call.outputs.size() != oracle.outputs.size()) return false;
  for (std::size_t o = 0; o < oracle.outputs.size(); ++o) {
    const auto& want = oracle.outputs[o];
    if (call.outputs[o].numel() != static_cast<int64_t>(want.value.size())) return false;
    if (call.outputs[o].dtype() != want.dtype) return false;
  }
  return true;
}

}  // namespace kcv::gates
