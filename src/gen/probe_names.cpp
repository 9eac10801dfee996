// File: src/gen/probe_names.cpp
// The spelling of probe enums in tokens, reports and the CLI: one table per enum, so that a
// name and its parse can never disagree. Names are part of the replay token format.
#include <array>
#include <string>
#include <utility>

#include "kcv/probe.hpp"

namespace kcv {
namespace {

template <typename E>
using NameTable = std::pair<E, std::string_view>;

constexpr std::array<NameTable<Distribution>, 20> kDistributionNames = {{
    {Distribution::kNormal, "normal"},
    {Distribution::kUniform01, "uniform01"},
    {Distribution::kHeavyTail, "heavy_tail"},
    {Distribution::kCancellation, "cancellation"},
    {Distribution::kWideRange, "wide_range"},
    {Distribution::kNearOverflow, "near_overflow"},
    {Distribution::kSubnormal, "subnormal"},
    {Distribution::kLowBits, "low_bits"},
    {Distribution::kPositive, "positive"},
    {Distribution::kSmallIndex, "small_index"},
    {Distribution::kExpUnderflow, "exp_underflow"},
    {Distribution::kTiny, "tiny"},
    {Distribution::kDrawn, "drawn"},
    {Distribution::kShiftedMean, "shifted_mean"},
    {Distribution::kParetoScaled, "pareto_scaled"},
    {Distribution::kWideScaled, "wide_scaled"},
    {Distribution::kLargeScaled, "large_scaled"},
    {Distribution::kHugeScaled, "huge_scaled"},
    {Distribution::kSubnormalScaled, "subnormal_scaled"},
    {Distribution::kTinyScaled, "tiny_scaled"},
}};

constexpr std::array<NameTable<ProbeScope>, 5> kScopeNames = {{
    {ProbeScope::kReference, "reference"},
    {ProbeScope::kValues, "values"},
    {ProbeScope::kRepeat, "repeat"},
    {ProbeScope::kShape, "shape"},
    {ProbeScope::kLayout, "layout"},
}};

constexpr std::array<NameTable<LayoutKind>, 6> kLayoutNames = {{
    {LayoutKind::kContiguous, "contiguous"},
    {LayoutKind::kTransposed, "transposed"},
    {LayoutKind::kSliced, "sliced"},
    {LayoutKind::kBroadcast, "broadcast"},
    {LayoutKind::kOffset, "offset"},
    {LayoutKind::kPaddedRows, "padded_rows"},
}};

constexpr std::array<NameTable<Special>, 7> kSpecialNames = {{
    {Special::kNaN, "nan"},
    {Special::kPosInf, "+inf"},
    {Special::kNegInf, "-inf"},
    {Special::kPosZero, "+0"},
    {Special::kNegZero, "-0"},
    {Special::kSubnormal, "subnormal"},
    {Special::kHuge, "huge"},
}};

template <typename E, std::size_t N>
std::string_view name_in(const std::array<NameTable<E>, N>& table, E value) {
  for (const auto& [e, name] : table) {
    if (e == value) {
      return name;
    }
  }
  return "?";
}

template <typename E, std::size_t N>
Expected<E> parse_in(const std::array<NameTable<E>, N>& table, std::string_view name,
                     std::string_view what) {
  std::string known;
  for (const auto& [e, n] : table) {
    if (n == name) {
      return e;
    }
    known += (known.empty() ? "" : ", ") + std::string(n);
  }
  return make_error(ErrorCode::kInvalidArgument,
                    "unknown " + std::string(what) + " '" + std::string(name) + "' (one of: " + known + ")",
                    std::string(what));
}

template <typename E, std::size_t N>
std::vector<E> all_in(const std::array<NameTable<E>, N>& table) {
  std::vector<E> out;
  for (const auto& entry : table) {
    out.push_back(entry.first);
  }
  return out;
}

}  // namespace

std::string_view distribution_name(Distribution d) { return name_in(kDistributionNames, d); }
std::string_view layout_name(LayoutKind k) { return name_in(kLayoutNames, k); }
std::string_view special_name(Special s) { return name_in(kSpecialNames, s); }
std::string_view scope_name(ProbeScope s) { return name_in(kScopeNames, s); }

bool is_transform(Distribution d) {
  return static_cast<int>(d) >= static_cast<int>(Distribution::kDrawn);
}

Expected<ProbeScope> parse_scope(std::string_view name) { return parse_in(kScopeNames, name, "scope"); }

Expected<Distribution> parse_distribution(std::string_view name) {
  return parse_in(kDistributionNames, name, "distribution");
}
Expected<LayoutKind> parse_layout_kind(std::string_view name) {
  return parse_in(kLayoutNames, name, "layout");
}
Expected<Special> parse_special(std::string_view name) {
  return parse_in(kSpecialNames, name, "special value");
}

std::vector<Distribution> all_distributions() { return all_in(kDistributionNames); }
std::vector<LayoutKind> all_layout_kinds() { return all_in(kLayoutNames); }
std::vector<Special> all_specials() { return all_in(kSpecialNames); }

}  // namespace kcv
