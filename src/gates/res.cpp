// File: src/gates/res.cpp
// RES family (research note §4). RES-01, memory safety, is tolerance-free: tail shapes run three
// times with fresh random guard and padding contents, and the judge reads the executor's buffer
// audit (guards, sentinel-poisoned outputs, input bytes) plus one inference: if the results move
// while only the guard contents changed, the kernel reads out of bounds. RES-02 judges a static
// ResourceReport against the contract's budgets and the architecture's limits; TMEM allocations
// must be powers of two in [32, 512] columns, sum within the budget, and each be deallocated.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "gates/families.hpp"
#include "gates/judge_common.hpp"
#include "gates/parallel.hpp"
#include "gates/plan_common.hpp"

namespace kcv::gates {

namespace {

constexpr int kRes01Repetitions = 3;
constexpr std::array<int64_t, 8> kSmallPrimes = {3, 5, 7, 11, 13, 17, 19, 23};

int64_t largest_prime_below(int64_t n) {
  for (int64_t p = n - 1; p >= 2; --p) {
    bool prime = true;
    for (int64_t d = 2; d * d <= p && prime; ++d) prime = p % d != 0;
    if (prime) return p;
  }
  return 2;
}

Probe res01_probe(const OpSignature& sig, const Contract& contract, Sizes s, const std::string& what) {
  Probe p = make_probe(sig, contract, std::move(s), Distribution::kNormal,
                       fmt::format("{} x{} random guards", what, kRes01Repetitions));
  p.repetitions = kRes01Repetitions;
  p.randomize_guards = true;
  return p;
}

}  // namespace

std::vector<Probe> plan_res01(const OpSignature& sig, const Contract& contract, uint64_t seed) {
  const Sizes ref = reference_sizes(sig, contract);
  const std::string d = innermost_dim(sig);
  const int64_t tile = std::max<int64_t>(contract.tile, 1);
  std::vector<Probe> probes;
  if (!d.empty() && !is_fixed(contract, d)) {
    for (auto [value, what] : {std::pair<int64_t, const char*>{tile - 1, "tile-1"}, {tile + 1, "tile+1"},
                               {largest_prime_below(tile), "prime"}}) {
      if (value < 1) continue;
      Sizes s = ref;
      s[d] = value;
      probes.push_back(res01_probe(sig, contract, s, fmt::format("{} {}={}", what, d, value)));
    }
  }
  Sizes ones = ref;
  Sizes primes = ref;
  std::size_t next = 0;
  for (auto& [dim, v] : ones) {
    if (is_fixed(contract, dim)) continue;
    v = 1;
    primes[dim] = kSmallPrimes[next++ % kSmallPrimes.size()];
  }
  probes.push_back(res01_probe(sig, contract, ones, "all ones"));
  probes.push_back(res01_probe(sig, contract, primes, "all primes"));
  return number_probes(std::move(probes), GateId::kRes01, seed);
}

namespace {

struct BufferBreak {
  Finding finding;
  std::string what;
};

std::vector<BufferBreak> buffer_breaks(const JudgeInput& in, const CallRecord& call) {
  std::vector<BufferBreak> broke;
  if (!call.guards_intact) {
    broke.push_back({Finding::kWrittenOutside,
                     fmt::format("wrote outside its buffers (guard byte offset {}){}", call.first_guard_violation,
                                 call.message.empty() ? "" : ": " + call.message)});
  }
  if (!call.all_written) {
    broke.push_back({Finding::kOutputUnwritten,
                     fmt::format("left {} unwritten (still the sentinel)",
                                 element_name(in.sig, std::max(call.unwritten_output, 0), call.first_unwritten))});
  }
  if (!call.inputs_unchanged) {
    const auto j = static_cast<std::size_t>(std::max(call.mutated_input, 0));
    broke.push_back({Finding::kInputModified,
                     fmt::format("modified input {} (storage element {})",
                                 j < in.sig.inputs.size() ? in.sig.inputs[j].name : "?", call.first_mutated_input_elem)});
  }
  return broke;
}

/// Elements where a later call differs from call 0 by more than 2*tau (two results within tau of
/// y* differ by at most 2*tau) or in class. Not bitwise even under a deterministic contract: a
/// last-bit difference is nondeterminism (ORD-02's finding), not a read outside the inputs. A
/// large output is scanned on threads (gates/parallel.hpp): the serial loop's first element and
/// count.
BitwiseDifference guard_dependence(const JudgeInput& in) {
  BitwiseDifference d;
  const CallRecord& base = in.calls.front();
  const auto merge = [](BitwiseDifference& total, const BitwiseDifference& part) {
    if (total.count == 0) {
      total = part;
    } else {
      total.count += part.count;
    }
  };
  for (std::size_t k = 1; k < in.calls.size(); ++k) {
    for (std::size_t o = 0; o < in.oracle.outputs.size(); ++o) {
      const OracleOutput& want = in.oracle.outputs[o];
      const TauFloor floor(want.dtype);
      const HostTensor& first = base.outputs[o];
      const HostTensor& other = in.calls[k].outputs[o];
      const auto scan = [&](std::size_t begin, std::size_t end, BitwiseDifference& part) {
        for (std::size_t i = begin; i < end; ++i) {
          const auto idx = static_cast<int64_t>(i);
          const double a = first.value_at(idx);
          const double b = other.value_at(idx);
          const double tau = floor(want.value[i], want.tau[i]);
          const bool same_class =
              std::isnan(a) == std::isnan(b) && (std::isfinite(a) == std::isfinite(b));
          const bool same =
              same_class && (!std::isfinite(a) ? (std::isnan(a) || a == b)
                                               : std::isnan(tau) || std::fabs(a - b) <= 2 * tau);
          if (same) continue;
          if (part.count++ == 0) part = BitwiseDifference{1, k, static_cast<int>(o), idx};
        }
      };
      reduce_chunks(want.value.size(), Split{}, d, scan, merge);
    }
  }
  return d;
}

}  // namespace

GateResult judge_res01(const JudgeInput& in) {
  if (auto screened = screen_calls(in)) return *screened;
  Evidence e;
  e.worst_ratio = std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < in.calls.size(); ++k) {
    const std::vector<BufferBreak> broke = buffer_breaks(in, in.calls[k]);
    if (broke.empty()) continue;
    std::vector<std::string> words;
    for (const BufferBreak& b : broke) words.push_back(b.what);
    e.violations = static_cast<int64_t>(broke.size());
    e.summary = fmt::format("call {}: {}", k, fmt::join(words, "; "));
    GateResult r = make_result(in, Verdict::kFail, std::move(e));
    r.finding = broke.front().finding;
    return r;
  }
  const BitwiseDifference d =
      ComparisonMemo::pass<BitwiseDifference>(ComparisonMemo::Pass::kGuardDependence, &in.oracle,
                                              in.calls, 0, [&] { return guard_dependence(in); });
  if (d.count > 0) {
    const auto o = static_cast<std::size_t>(d.output);
    e.output = d.output;
    e.worst_index = d.index;
    e.candidate_value = in.calls[d.call].outputs[o].value_at(d.index);
    e.oracle_value = in.calls.front().outputs[o].value_at(d.index);
    e.violations = d.count;
    e.summary = fmt::format("out-of-bounds read influences results: only guard contents changed, yet "
                            "call {} gives {} = {} where call 0 gave {} ({} elements{})", d.call,
                            element_name(in.sig, d.output, d.index), show(e.candidate_value),
                            show(e.oracle_value), d.count, " beyond 2*tau");
    GateResult r = make_result(in, Verdict::kFail, std::move(e));
    r.finding = Finding::kReadOutside;
    return r;
  }
  e.worst_ratio = 0;
  e.summary = fmt::format("{} calls: guards intact, every element written, inputs unchanged, results "
                          "independent of guard contents", in.calls.size());
  return make_result(in, Verdict::kPass, std::move(e));
}

}  // namespace kcv::gates

namespace kcv {

namespace {

constexpr int64_t kTmemMinColumns = 32;   // tcgen05.alloc: powers of two from 32 ...
constexpr int64_t kTmemMaxColumns = 512;  // ... to all 512 columns of an SM

struct ResourceAudit {
  std::vector<std::string> breaks;
  std::vector<std::string> undecided;
  std::string tightest;
  double worst_ratio = 0;
};

void check_limit(ResourceAudit& a, const KernelResources& k, std::string_view what, int64_t measured,
                 const std::optional<int64_t>& budget, std::optional<int64_t> arch, std::string_view arch_name) {
  int64_t limit = arch.value_or(std::numeric_limits<int64_t>::max());
  std::string source = fmt::format("{} limit", arch_name.empty() ? "architecture" : arch_name);
  if (budget && *budget <= limit) {
    limit = *budget;
    source = "declared budget";
  }
  if (!budget && !arch) return;
  const double ratio = limit > 0 ? static_cast<double>(measured) / static_cast<double>(limit)
                                 : (measured > 0 ? std::numeric_limits<double>::infinity() : 0.0);
  const std::string line = fmt::format("kernel {}: {} {} of {} ({})", k.name, measured, what, limit, source);
  if (measured > limit) a.breaks.push_back(line);
  if (a.tightest.empty() || ratio > a.worst_ratio) {
    a.worst_ratio = ratio;
    a.tightest = line;
  }
}

void check_tmem(ResourceAudit& a, const KernelResources& k, const Contract& c, const ArchLimits& lim) {
  int64_t total = 0;
  for (int64_t cols : k.tmem_alloc_columns) {
    total += cols;
    const bool pow2 = cols > 0 && (cols & (cols - 1)) == 0;
    if (!pow2 || cols < kTmemMinColumns || cols > kTmemMaxColumns) {
      a.breaks.push_back(fmt::format("kernel {}: tcgen05.alloc of {} columns (must be a power of two in "
                                     "[{}, {}])", k.name, cols, kTmemMinColumns, kTmemMaxColumns));
      a.worst_ratio = std::numeric_limits<double>::infinity();
    }
  }
  if (!k.tmem_alloc_columns.empty()) {
    check_limit(a, k, "TMEM columns allocated", total, c.budgets.tmem_columns, lim.tmem_columns, k.arch);
  }
  const auto allocs = static_cast<int64_t>(k.tmem_alloc_columns.size());
  if (k.tmem_deallocs < allocs) {
    a.breaks.push_back(fmt::format("kernel {}: {} tcgen05.alloc but {} tcgen05.dealloc (TMEM leak)",
                                   k.name, allocs, k.tmem_deallocs));
    a.worst_ratio = std::numeric_limits<double>::infinity();
  }
  if (k.tmem_dynamic_alloc) {
    a.undecided.push_back(fmt::format("kernel {}: tcgen05.alloc with a non-constant column count "
                                      "cannot be bounded statically", k.name));
  }
}

void audit_kernel(ResourceAudit& a, const KernelResources& k, const Contract& c, ResourceFormat format) {
  const std::string arch = k.arch.empty() ? c.arch : k.arch;
  const ArchLimits lim = arch_limits(arch);
  const Budgets& b = c.budgets;
  check_limit(a, k, "registers per thread", k.registers, b.registers_per_thread, lim.max_registers_per_thread, arch);
  if (b.spill_bytes && format != ResourceFormat::kPtxasLog) {
    // cuobjdump and PTX carry no spill counts: a zero there is unknown, not "no spills".
    a.undecided.push_back(fmt::format("kernel {}: the contract bounds spills, but {} output has no "
                                      "spill counts; give a `ptxas -v` log", k.name,
                                      format == ResourceFormat::kCuobjdump ? "cuobjdump" : "PTX"));
  } else if (b.spill_bytes) {
    check_limit(a, k, "spill bytes", std::max(k.spill_store_bytes, k.spill_load_bytes), b.spill_bytes,
                std::nullopt, arch);
  }
  if (b.stack_bytes && format == ResourceFormat::kPtx) {
    // PTX has no stack frame: local arrays may still be promoted to registers by ptxas.
    a.undecided.push_back(fmt::format("kernel {}: the contract bounds the stack frame, but PTX "
                                      "output has none; give a `ptxas -v` log or cuobjdump",
                                      k.name));
  } else if (b.stack_bytes) {
    // A stack frame without spills is an array ptxas could not keep in registers (indexed by a
    // value it cannot resolve at compile time): every access goes to local memory.
    check_limit(a, k, "stack frame bytes", k.stack_bytes, b.stack_bytes, std::nullopt, arch);
  }
  check_limit(a, k, "shared bytes per block", k.shared_bytes, b.shared_bytes, lim.max_shared_per_block, arch);
  if (k.max_threads > 0) {
    check_limit(a, k, "threads per block", k.max_threads, b.threads_per_block, lim.max_threads_per_block, arch);
  }
  check_tmem(a, k, c, lim);
}

}  // namespace

GateResult judge_resources(const ResourceReport& report, const Contract& contract) {
  GateResult r;
  r.gate = GateId::kRes02;
  r.evidence.probe_label = report.source;
  if (report.kernels.empty()) {
    r.verdict = Verdict::kNotApplicable;
    r.reason = fmt::format("the resource report{} lists no kernel",
                           report.source.empty() ? "" : " of " + report.source);
    r.evidence.summary = r.reason;
    return r;
  }
  r.probes_run = 1;
  ResourceAudit a;
  for (const KernelResources& k : report.kernels) audit_kernel(a, k, contract, report.format);
  r.evidence.worst_ratio = a.worst_ratio;
  r.evidence.violations = static_cast<int64_t>(a.breaks.size());
  if (!a.breaks.empty()) {
    r.verdict = Verdict::kFail;
    r.evidence.summary = fmt::format("{}", fmt::join(a.breaks, "; "));
  } else if (!a.undecided.empty()) {
    r.verdict = Verdict::kError;
    r.reason = fmt::format("{}", fmt::join(a.undecided, "; "));
    r.evidence.summary = r.reason;
  } else {
    r.verdict = Verdict::kPass;
    r.evidence.summary = fmt::format("{} kernel(s) within budgets and limits; tightest: {}",
                                     report.kernels.size(), a.tightest);
  }
  return r;
}

}  // namespace kcv
