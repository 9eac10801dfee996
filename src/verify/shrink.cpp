// File: src/verify/shrink.cpp
// Counterexample shrinking in Hypothesis's manner: a fixed sequence of passes, each proposing
// simpler probes in simplest-first order and keeping the first that still fails; repeat until a
// whole round makes no progress or the run budget is spent. Deterministic: the same failing probe
// always shrinks to the same result.
#include <algorithm>
#include <set>

#include "kcv/verify.hpp"

namespace kcv {

namespace {

constexpr int kMaxRuns = 150;

class Shrinker {
 public:
  Shrinker(Candidate& c, Executor& e, const Contract& contract, Probe start)
      : candidate_(c), executor_(e), contract_(contract), best_(std::move(start)) {}

  Probe run() {
    bool progress = true;
    while (progress && runs_ < kMaxRuns) {
      progress = shrink_sizes() | drop_injections() | simplify_inputs() | drop_launch_configs() |
                 reduce_calls();
    }
    if (runs_ > 0 && best_.label.find("(shrunk)") == std::string::npos) best_.label += " (shrunk)";
    return best_;
  }

 private:
  bool still_fails(const Probe& p) {
    if (runs_ >= kMaxRuns || p == best_) return false;
    ++runs_;
    return run_probe(candidate_, executor_, p, contract_).verdict == Verdict::kFail;
  }

  bool try_accept(const Probe& p) {
    if (!still_fails(p)) return false;
    best_ = p;
    return true;
  }

  static std::vector<int64_t> smaller_values(int64_t v) {
    std::set<int64_t> out;
    for (int64_t c : {int64_t{1}, int64_t{2}, int64_t{3}, v / 4, v / 2, v - 1}) {
      if (c >= 1 && c < v) out.insert(c);
    }
    return {out.begin(), out.end()};
  }

  bool is_fixed(const std::string& dim) const {
    const auto& f = contract_.fixed_dims;
    return dim == "R" || dim == "S" || std::find(f.begin(), f.end(), dim) != f.end();
  }

  bool shrink_sizes() {
    bool any = false;
    for (const auto& [dim, value] : Probe(best_).sizes) {
      if (is_fixed(dim)) continue;
      for (int64_t v : smaller_values(best_.sizes.at(dim))) {
        Probe p = best_;
        p.sizes[dim] = v;
        // Injections must stay inside the smaller tensors.
        std::erase_if(p.injections, [&](const Injection& inj) { return inj.index >= input_numel(p, inj.input); });
        if (try_accept(p)) {
          any = true;
          break;
        }
      }
    }
    return any;
  }

  int64_t input_numel(const Probe& p, int input) const {
    const Op* op = find_op(candidate_.op());
    if (op == nullptr || input < 0 || input >= static_cast<int>(op->signature().inputs.size())) return 0;
    return numel(shape_of(op->signature().inputs[static_cast<std::size_t>(input)], p.sizes));
  }

  bool drop_injections() {
    bool any = false;
    for (std::size_t i = 0; i < best_.injections.size();) {
      Probe p = best_;
      p.injections.erase(p.injections.begin() + static_cast<std::ptrdiff_t>(i));
      if (try_accept(p)) {
        any = true;
      } else {
        ++i;
      }
    }
    return any;
  }

  bool simplify_inputs() {
    bool any = false;
    for (std::size_t i = 0; i < best_.inputs.size(); ++i) {
      if (best_.inputs[i].layout.kind != LayoutKind::kContiguous) {
        Probe p = best_;
        p.inputs[i].layout = Layout{};
        any |= try_accept(p);
      }
      if (best_.inputs[i].dist != Distribution::kNormal) {
        Probe p = best_;
        p.inputs[i].dist = Distribution::kNormal;
        any |= try_accept(p);
      }
    }
    return any;
  }

  bool drop_launch_configs() {
    bool any = false;
    for (std::size_t i = 0; best_.launch_configs.size() > 1 && i < best_.launch_configs.size();) {
      Probe p = best_;
      p.launch_configs.erase(p.launch_configs.begin() + static_cast<std::ptrdiff_t>(i));
      if (try_accept(p)) {
        any = true;
      } else {
        ++i;
      }
    }
    return any;
  }

  bool reduce_calls() {
    bool any = false;
    if (best_.repetitions > 2) {
      Probe p = best_;
      p.repetitions = 2;
      any |= try_accept(p);
    }
    if (best_.concurrency > 2) {
      Probe p = best_;
      p.concurrency = 2;
      any |= try_accept(p);
    }
    return any;
  }

  Candidate& candidate_;
  Executor& executor_;
  const Contract& contract_;
  Probe best_;
  int runs_ = 0;
};

}  // namespace

Probe shrink_probe(Candidate& candidate, Executor& executor, const Probe& failing,
                   const Contract& contract) {
  return Shrinker(candidate, executor, contract, failing).run();
}

}  // namespace kcv
