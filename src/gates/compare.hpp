// File: src/gates/compare.hpp
// The one element-wise comparison every numeric gate shares: ratio_i = |ŷ_i − y*_i| / tau_i over
// the elements whose oracle value is finite. A non-finite candidate where the oracle is finite
// has ratio inf; tau == 0 demands exact equality (ratio 0 or inf); a NaN tau or a non-finite
// oracle value is not judged here (the mask belongs to EXC-01). The final-rounding term of tau is
// floored at half an ulp of the output type at y*: for normal y* that is ≤ u_out·|y*| and changes
// nothing, in the subnormal range it is the real rounding error of the best representable answer.
#pragma once

#include <algorithm>
#include <any>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "gates/parallel.hpp"
#include "kcv/call.hpp"
#include "kcv/dtype.hpp"
#include "kcv/op.hpp"

namespace kcv::gates {

/// effective_tau of one output dtype, its constants taken once: the judges apply it to every
/// element of outputs of up to hundreds of millions of elements, where a call into the numeric
/// library per element (dtype switch, frexp) cost more than the rest of the comparison.
class TauFloor {
 public:
  explicit TauFloor(DType out_dtype);
  /// tau with its final-rounding part floored at half an ulp of the dtype at `oracle`; tau itself
  /// when tau <= 0, NaN, or the oracle value is not finite (or the dtype is not floating).
  double operator()(double oracle, double tau) const {
    if (!(tau > 0) || !std::isfinite(oracle) || !floating_) return tau;
    const double ax = std::fabs(oracle);
    double ulp = min_ulp_;  // below the smallest normal: the smallest subnormal's step
    if (!(ax < min_normal_)) {
      // ulp = 2^(e - mant_bits) for ax in [2^e, 2^(e+1)), built from ax's biased exponent
      const auto biased = static_cast<int64_t>(std::bit_cast<uint64_t>(ax) >> 52) - mant_bits_;
      ulp = biased >= 1 ? std::bit_cast<double>(static_cast<uint64_t>(biased) << 52)
                        : ulp_of(dtype_, ax);  // a subnormal double's ulp (fp64 near its minimum)
    }
    return std::max(tau, 0.5 * ulp);
  }

 private:
  DType dtype_;
  bool floating_;
  int64_t mant_bits_ = 0;
  double min_normal_ = 0;
  double min_ulp_ = 0;
};

/// ratio of one element (see the file comment); NaN when the element is not judged.
inline double element_ratio(const TauFloor& floor, double candidate, double oracle, double tau) {
  if (!std::isfinite(oracle) || std::isnan(tau)) return std::numeric_limits<double>::quiet_NaN();
  if (!std::isfinite(candidate)) return std::numeric_limits<double>::infinity();
  const double err = std::fabs(candidate - oracle);
  if (tau == 0) return err == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return err / floor(oracle, tau);
}
double element_ratio(DType out_dtype, double candidate, double oracle, double tau);
/// TauFloor(out_dtype)(oracle, tau), for one element.
double effective_tau(DType out_dtype, double oracle, double tau);

struct Comparison {
  int64_t judged = 0;      // elements with a ratio
  int64_t violations = 0;  // ratio > 1 (non-finite candidates included)
  int64_t nonfinite = 0;   // candidate NaN/Inf where the oracle is finite
  int worst_output = 0;
  int64_t worst_index = -1;  // -1: nothing judged
  double worst_ratio = 0;
  double candidate = 0;
  double oracle = 0;
  double tau = 0;
  std::vector<double> quantiles;  // p50, p90, p99, max of the ratios (empty: nothing judged)
};

/// p50, p90, p99 and max of `ratios` (nearest rank); empty input gives an empty result.
std::vector<double> ratio_quantiles(std::vector<double> ratios);
/// ratio_quantiles of `ratios`, which it may reorder.
std::vector<double> ratio_quantiles_in_place(std::vector<double>& ratios);

/// While one lives on a thread, compare_output and compare_call on that thread keep their array
/// of ratios from call to call instead of allocating one per call: a fresh array of n doubles is
/// faulted in and zeroed by the kernel every time, which on outputs of millions of elements costs
/// more than the comparison itself (a perf profile of an audited kernel's orchestrator shows it
/// as page faults under compare_into). run_pipeline holds one for a kernel's run, so the array
/// lives no longer than the run.
class RatioScratch {
 public:
  RatioScratch();
  ~RatioScratch();
  RatioScratch(const RatioScratch&) = delete;
  RatioScratch& operator=(const RatioScratch&) = delete;
  /// The array of this thread's innermost RatioScratch; nullptr when there is none.
  static std::vector<double>* current();

 private:
  std::vector<double> ratios_;
  RatioScratch* outer_;
};

/// While one lives on a thread, compare_call on that thread remembers its comparison of each call
/// of one probe's outcome against each oracle result the memo holds: the profiles judging a probe
/// mostly share one result (SharedOracleResult; on the GPU three of the five profiles have the
/// same eager flags, on the CPU all five), and each would otherwise compare every call, element
/// by element, again. A comparison is a pure function of the result and the call, both immutable
/// while the memo lives; the memo keeps the results it holds alive, so no other result takes
/// one's address meanwhile. The pipeline holds one per probe and hands it each profile's result.
class ComparisonMemo {
 public:
  /// `calls`: the outcome's calls; compare_call remembers only calls that are elements of it.
  explicit ComparisonMemo(const std::vector<CallRecord>& calls);
  ~ComparisonMemo();
  ComparisonMemo(const ComparisonMemo&) = delete;
  ComparisonMemo& operator=(const ComparisonMemo&) = delete;
  /// A result the judges are about to read; its comparisons are remembered from now on.
  void hold(std::shared_ptr<const OracleResult> result);
  /// This thread's innermost memo; nullptr when there is none.
  static ComparisonMemo* current();
  /// The remembered comparison of `call` against `oracle`, or nullptr; remember() stores one.
  const Comparison* find(const OracleResult& oracle, const CallRecord& call);
  void remember(const OracleResult& oracle, const CallRecord& call, const Comparison& c);

  /// The judges' other element passes, each a pure function of one oracle result (or of the
  /// calls alone) and the outcome's calls: a profile judging with a result another profile
  /// already judged with (or any profile, for a pass of the calls alone) reads the first's.
  enum class Pass { kMasks, kSubnormals, kBitsLost, kSpread, kGuardDependence, kBitwise, kTies };
  /// compute() once per (pass, result, part) while this thread's innermost memo lives, when
  /// `calls` are the outcome's calls in order and `oracle` is a held result (or null: a pass of
  /// the calls alone); otherwise, or with no memo, compute() itself. `part` tells apart the
  /// pieces of one pass a judge asks for separately (a call's output, say).
  template <class T, class F>
  static T pass(Pass pass, const OracleResult* oracle, const CallsView& calls, std::size_t part,
                F&& compute) {
    ComparisonMemo* memo = current();
    if (memo == nullptr || !memo->covers(oracle, calls)) return compute();
    const PassKey key{pass, oracle, part};
    if (auto it = memo->passes_.find(key); it != memo->passes_.end())
      return std::any_cast<T>(it->second);
    T value = compute();
    memo->passes_.emplace(key, value);
    return value;
  }

 private:
  using PassKey = std::tuple<Pass, const OracleResult*, std::size_t>;
  bool covers(const OracleResult* oracle, const CallsView& calls);
  std::map<PassKey, std::any> passes_;
  struct Held {
    std::shared_ptr<const OracleResult> result;
    std::vector<std::optional<Comparison>> by_call;  // one slot per call of the outcome
  };
  Held* held(const OracleResult& oracle);
  std::optional<std::size_t> call_index(const CallRecord& call) const;
  const std::vector<CallRecord>& calls_;
  std::vector<Held> held_;
  ComparisonMemo* outer_;
};

/// Adds the counts of a part that comes after c's elements to `c`; the part's worst element
/// replaces c's only when strictly worse (ties keep the first index, as the serial loop does).
void merge_into(Comparison& c, const Comparison& part);

/// One output's elements added to `c` (counts; its worst element if strictly worse than c's)
/// and their ratios appended to `ratios` in index order, NaN ratios skipped: what compare_output
/// and compare_call are made of. An output of at least split.from elements is compared in
/// contiguous chunks on several threads, with the serial loop's result.
/// @pre candidate has oracle.value.size() elements.
void compare_into(const OracleOutput& oracle, const HostTensor& candidate, int output,
                  Comparison& c, std::vector<double>& ratios, Split split = {});
/// @pre candidate has oracle.value.size() elements. A large output is compared on several
/// threads (`split`), with the serial loop's result.
Comparison compare_output(const OracleOutput& oracle, const HostTensor& candidate, int output,
                          Split split = {});
/// All outputs of one call; the worst element over all of them.
/// @pre outputs_match(oracle, call)
Comparison compare_call(const OracleResult& oracle, const CallRecord& call, Split split = {});

/// True when the call returned one tensor per oracle output, of its dtype and element count.
bool outputs_match(const OracleResult& oracle, const CallRecord& call);

}  // namespace kcv::gates
