// File: src/verify/pipeline.cpp
// run_pipeline: for each gate, plan probes, make each probe's inputs, call the candidate once,
// then evaluate the oracle and judge under every profile still open for that gate; fold, shrink
// each distinct failing probe once and re-judge the shrunk probe under the profiles it failed.
// Harness trouble (an oracle Error) is a verdict `error` of that probe, never a failure, and a
// probe the reference refuses does not count. RES-02 is judged from the runner's resources.
#include "kcv/pipeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <system_error>

#include "gates/compare.hpp"

namespace kcv {

Contract with_profile(const Contract& contract, ProfileId profile) {
  Contract c = contract;
  c.profile = profile;
  return c;
}

namespace {

// Adds the wall time of its scope to a PipelineTimings field (none when the sink is null).
class Timed {
 public:
  explicit Timed(double* sink) : sink_(sink), t0_(std::chrono::steady_clock::now()) {}
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;
  ~Timed() {
    if (sink_ != nullptr)
      *sink_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  double* sink_;
  std::chrono::steady_clock::time_point t0_;
};

template <typename F>
auto timed(PipelineTimings* t, double PipelineTimings::*field, F f) {
  Timed scope(t != nullptr ? &(t->*field) : nullptr);
  return f();
}

// The candidate's calls of a probe. With `beside` non-empty (PipelineOptions::
// evaluate_beside_calls: the contracts of the profiles still open), the trusted results under
// them are made meanwhile on a thread of their own; evaluate() memoizes them per probe and
// contract, so judge_one finds them made (an Error is not kept: judge_one meets it again). The
// wait for that thread after the calls counts as `oracle`, the part the calls hid as
// `oracle_beside`. No thread to be had: the results are made after the calls, as without it.
ProbeOutcome calls_and_trusted(Oracle& oracle, CandidateRunner& runner, const Probe& probe,
                               const ProbeInputs& inputs, const Contract& contract,
                               const std::vector<Contract>& beside, PipelineTimings* timings) {
  using Clock = std::chrono::steady_clock;
  std::future<double> trusted;
  if (!beside.empty()) {
    try {
      trusted = std::async(std::launch::async, [&oracle, &probe, &inputs, &beside] {
        const auto t0 = Clock::now();
        for (const Contract& c : beside) {
          const auto r = oracle.evaluate(probe, inputs, c);
          if (!r || !(*r)->refused.empty()) break;
        }
        return std::chrono::duration<double>(Clock::now() - t0).count();
      });
    } catch (const std::system_error&) {
      trusted = {};
    }
  }
  ProbeOutcome outcome = timed(timings, &PipelineTimings::candidate,
                               [&] { return runner.run(probe, inputs, contract); });
  if (trusted.valid()) {
    const auto t0 = Clock::now();
    const double ran = trusted.get();  // rethrows what evaluate threw
    const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
    if (timings != nullptr) {
      timings->oracle += waited;
      timings->oracle_beside += std::max(0.0, ran - waited);
    }
  }
  return outcome;
}

// Gates whose verdict rests on a value bound; a probe without a value claim cannot judge them.
bool value_bound_gate(GateId id) {
  switch (id) {
    case GateId::kCmp01:
    case GateId::kCmp03:
    case GateId::kOrd01:
    case GateId::kOrd03:
    case GateId::kPrc01:
    case GateId::kPrc02:
      return true;
    default:
      return false;
  }
}

constexpr const char* kTimeLimitReached = "the time limit was reached";

GateResult plain_result(GateId id, Verdict v, std::string reason, const Probe* probe = nullptr) {
  GateResult r;
  r.gate = id;
  r.verdict = v;
  r.reason = reason;
  r.evidence.summary = std::move(reason);
  if (probe != nullptr) r.evidence.probe_label = probe->label;
  return r;
}

// What became of a probe judge_one was given: judged, refused by the reference, or left by a
// trusted side that failed (an Error, never a verdict on the candidate).
enum class Judged { kJudged, kRefused, kTrustedFailed };

// One probe judged under one contract, given its inputs and calls.
GateResult judge_one(ProbeSource& source, Oracle& oracle, const Probe& probe,
                     const ProbeInputs& inputs, const ProbeOutcome& outcome,
                     const Contract& contract, Judged* how, PipelineTimings* timings) {
  *how = Judged::kJudged;
  auto evaluated = timed(timings, &PipelineTimings::oracle,
                         [&] { return oracle.evaluate(probe, inputs, contract); });
  if (!evaluated) {
    *how = Judged::kTrustedFailed;
    return plain_result(probe.gate, Verdict::kError,
                        "the trusted side failed: " + evaluated.error().to_string(), &probe);
  }
  SharedOracleResult shared = std::move(*evaluated);
  if (!shared->refused.empty()) {
    *how = Judged::kRefused;
    return plain_result(probe.gate, Verdict::kNotApplicable, shared->refused, &probe);
  }
  if (!shared->no_value_claim.empty() && value_bound_gate(probe.gate)) {
    return plain_result(probe.gate, Verdict::kNotApplicable, shared->no_value_claim, &probe);
  }
  {
    Timed scope(timings != nullptr ? &timings->oracle : nullptr);
    shared = oracle.refine(probe, inputs, contract, outcome, std::move(shared));
  }
  if (gates::ComparisonMemo* memo = gates::ComparisonMemo::current()) memo->hold(shared);
  const OracleResult& result = *shared;
  const GateDef& def = gate_def(probe.gate);
  JudgeInput in{probe, source.signature(), contract, result, outcome, inputs.tensors};
  const auto judging = std::chrono::steady_clock::now();
  GateResult r = timed(timings, &PipelineTimings::judge, [&] { return def.judge(in); });
  if (timings != nullptr) {
    const auto g = std::find(kAllGates.begin(), kAllGates.end(), probe.gate) - kAllGates.begin();
    timings->judge_per_gate[static_cast<std::size_t>(g)] +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - judging).count();
  }
  r.gate = probe.gate;
  r.probes_run = 1;
  if (r.evidence.probe_label.empty()) r.evidence.probe_label = probe.label;
  if (r.verdict == Verdict::kFail) {
    r.failing_probe = probe;
    r.scope = source.scope_of(probe);
  } else {
    r.failing_probe.reset();
  }
  return r;
}

GateResult judge_probe_timed(ProbeSource& source, Oracle& oracle, CandidateRunner& runner,
                             const Probe& probe, const Contract& contract, bool beside,
                             PipelineTimings* timings);
// `within_limit` (may be empty): false once the kernel's time limit has passed; a simplification
// judged across it is not taken (its calls and trusted runs had what was left of the limit).
Probe shrink_timed(ProbeSource& source, Oracle& oracle, CandidateRunner& runner,
                   const Probe& failing, const Contract& contract, int max_runs, bool beside,
                   PipelineTimings* timings, const std::function<bool()>& within_limit);

GateResult resource_gate(CandidateRunner& runner, const Contract& contract) {
  auto facts = runner.resources();
  if (!facts) return plain_result(GateId::kRes02, Verdict::kError, facts.error().to_string());
  if (!facts->report)
    return plain_result(GateId::kRes02, Verdict::kNotApplicable, facts->none_reason);
  GateResult r = judge_resources(*facts->report, contract);
  if (r.verdict == Verdict::kFail) r.finding = Finding::kResourceOverLimit;
  return r;
}

class GateRun {
 public:
  GateRun(ProbeSource& source, Oracle& oracle, CandidateRunner& runner, const Contract& contract,
          const PipelineOptions& options, std::vector<ProfileId> profiles, std::string& stopped,
          PipelineTimings& timings)
      : source_(source),
        oracle_(oracle),
        runner_(runner),
        contract_(contract),
        options_(options),
        profiles_(std::move(profiles)),
        stopped_(stopped),
        timings_(timings) {}

  // One result per profile, in profiles_ order.
  std::vector<GateResult> run(GateId id) {
    if (id == GateId::kRes02)
      return per_profile(
          id, [&](ProfileId p) { return resource_gate(runner_, with_profile(contract_, p)); });
    if (std::string why = source_.not_applicable_reason(id, contract_); !why.empty()) {
      return per_profile(id,
                         [&](ProfileId) { return plain_result(id, Verdict::kNotApplicable, why); });
    }
    const std::vector<Probe> probes = source_.plan(id, contract_, options_.seed);
    if (probes.empty()) {
      return per_profile(id, [&](ProfileId) {
        return plain_result(id, Verdict::kNotApplicable,
                            "no probe applies to this problem and contract");
      });
    }
    std::vector<std::vector<GateResult>> results(profiles_.size());
    std::vector<int> refused(profiles_.size(), 0);
    int not_run_here = 0;  // probes the runner refused: the candidate was not judged there
    std::vector<bool> open(profiles_.size(), true);
    for (const Probe& probe : probes) {
      if (std::none_of(open.begin(), open.end(), [](bool b) { return b; })) break;
      if (const std::string why = stop_reason(); !why.empty()) {
        not_run(results, open, id, probe, why);
        break;
      }
      auto inputs =
          timed(&timings_, &PipelineTimings::inputs, [&] { return oracle_.make_inputs(probe); });
      if (!inputs && past_time_limit()) {  // given what was left of the limit: not a failure
        stopped_ = kTimeLimitReached;
        not_run(results, open, id, probe, stopped_);
        break;
      }
      if (!inputs) {
        for (std::size_t k = 0; k < profiles_.size(); ++k) {
          if (open[k])
            results[k].push_back(
                plain_result(id, Verdict::kError,
                             "the trusted side failed: " + inputs.error().to_string(), &probe));
        }
        continue;
      }
      if (!inputs->refused.empty()) {
        for (int& n : refused) ++n;
        last_refusal_ = inputs->refused;
        continue;
      }
      std::vector<Contract> beside;
      for (std::size_t k = 0; k < profiles_.size() && options_.evaluate_beside_calls; ++k)
        if (open[k]) beside.push_back(with_profile(contract_, profiles_[k]));
      const ProbeOutcome outcome =
          calls_and_trusted(oracle_, runner_, probe, *inputs, contract_, beside, &timings_);
      if (cut_by_time_limit(outcome)) {  // the harness's limit, not the candidate's slowness
        stopped_ = kTimeLimitReached;
        not_run(results, open, id, probe, stopped_);
        break;
      }
      if (!outcome.refused.empty()) {  // the machine cannot run the candidate at this probe
        ++not_run_here;
        last_runner_refusal_ = outcome.refused;
        continue;
      }
      gates::ComparisonMemo memo(outcome.calls);  // the profiles share their comparisons
      bool cut = false;
      for (std::size_t k = 0; k < profiles_.size(); ++k) {
        if (!open[k]) continue;
        Judged how = Judged::kJudged;
        GateResult r = judge_one(source_, oracle_, probe, *inputs, outcome,
                                 with_profile(contract_, profiles_[k]), &how, &timings_);
        if (how == Judged::kRefused) {
          ++refused[k];
          last_refusal_ = r.reason;
          continue;
        }
        if (how == Judged::kTrustedFailed && past_time_limit()) {  // as for make_inputs above
          r = plain_result(id, Verdict::kError, std::string("not run: ") + kTimeLimitReached,
                           &probe);
          cut = true;
        }
        if (r.verdict == Verdict::kFail) open[k] = false;
        results[k].push_back(std::move(r));
      }
      if (cut) {
        stopped_ = kTimeLimitReached;
        break;
      }
    }
    std::vector<GateResult> out;
    for (std::size_t k = 0; k < profiles_.size(); ++k) {
      GateResult r = combine_results(id, results[k]);
      r.probes_refused = refused[k];
      r.probes_not_run = not_run_here;
      if (not_run_here > 0 && r.verdict != Verdict::kFail) {
        // The reference refusing a probe takes it out of the problem; the runner refusing one
        // leaves the candidate unjudged there, and a candidate earns no pass from a probe it
        // did not run (it could claim to be short of memory wherever it is wrong).
        r.verdict = Verdict::kError;
        r.reason = fmt::format(
            "not judged at every probe: {} probe(s) could not run the "
            "candidate on this machine; the last: {}",
            not_run_here, last_runner_refusal_);
        r.evidence.summary = r.reason;
      } else if (results[k].empty() && refused[k] > 0) {
        r.reason = fmt::format("the reference refuses all {} probe(s) of this gate; the last: {}",
                               refused[k], last_refusal_);
        r.evidence.summary = r.reason;
      }
      out.push_back(std::move(r));
    }
    if (options_.shrink) {
      Timed scope(&timings_.shrink);
      shrink(out);
    }
    return out;
  }

 private:
  template <typename F>
  std::vector<GateResult> per_profile(GateId id, F make) {
    std::vector<GateResult> out;
    for (ProfileId p : profiles_) {
      GateResult r = make(p);
      r.gate = id;
      out.push_back(std::move(r));
    }
    return out;
  }

  // `probe` is not run under any still-open profile, for `why` (an error, never a verdict on the
  // candidate).
  void not_run(std::vector<std::vector<GateResult>>& results, const std::vector<bool>& open,
               GateId id, const Probe& probe, const std::string& why) const {
    for (std::size_t k = 0; k < profiles_.size(); ++k)
      if (open[k])
        results[k].push_back(plain_result(id, Verdict::kError, "not run: " + why, &probe));
  }

  // Whether the kernel's time limit has passed: what runs now, on either side, is given what
  // was left of it (ModuleConfig::call_budget_ms), so its timeout or failure says nothing of the
  // candidate.
  bool past_time_limit() const { return options_.keep_going && !options_.keep_going(); }

  // A call that timed out once the time limit had passed.
  bool cut_by_time_limit(const ProbeOutcome& outcome) const {
    if (!past_time_limit()) return false;
    return std::any_of(outcome.calls.begin(), outcome.calls.end(),
                       [](const CallRecord& c) { return c.status == CallStatus::kTimeout; });
  }

  std::string stop_reason() {
    if (!stopped_.empty()) return stopped_;
    if (std::string why = runner_.exhausted(); !why.empty()) stopped_ = why;
    if (past_time_limit()) stopped_ = kTimeLimitReached;
    if (stopped_.empty() && options_.abandon) stopped_ = options_.abandon();
    return stopped_;
  }

  // Each distinct failing probe is shrunk once (under the first profile it failed); the shrunk
  // probe replaces the evidence of every profile where it still fails.
  void shrink(std::vector<GateResult>& results) {
    std::map<std::string, Probe> shrunk;
    for (std::size_t k = 0; k < results.size(); ++k) {
      GateResult& r = results[k];
      if (r.verdict != Verdict::kFail || !r.failing_probe || !stop_reason().empty()) continue;
      const Contract c = with_profile(contract_, profiles_[k]);
      const std::string token = probe_to_token(*r.failing_probe);
      auto it = shrunk.find(token);
      if (it == shrunk.end()) {
        it = shrunk
                 .emplace(token, shrink_timed(source_, oracle_, runner_, *r.failing_probe, c,
                                              options_.shrink_runs, options_.evaluate_beside_calls,
                                              &timings_, options_.keep_going))
                 .first;
      }
      if (it->second == *r.failing_probe) continue;
      GateResult again = judge_probe_timed(source_, oracle_, runner_, it->second, c,
                                           options_.evaluate_beside_calls, &timings_);
      // Judged across the time limit, the shrunk probe's failure may be the limit's: the
      // original probe's evidence stands.
      if (again.verdict != Verdict::kFail || past_time_limit()) continue;
      r.evidence = again.evidence;
      r.failing_probe = it->second;
      r.finding =
          again.finding;  // the scope stays the original probe's: the most basic one that fails
    }
  }

  ProbeSource& source_;
  Oracle& oracle_;
  CandidateRunner& runner_;
  const Contract& contract_;
  const PipelineOptions& options_;
  std::vector<ProfileId> profiles_;
  std::string& stopped_;
  PipelineTimings& timings_;
  std::string last_refusal_;
  std::string last_runner_refusal_;
};

GateResult judge_probe_timed(ProbeSource& source, Oracle& oracle, CandidateRunner& runner,
                             const Probe& probe, const Contract& contract, bool beside,
                             PipelineTimings* timings) {
  auto inputs = timed(timings, &PipelineTimings::inputs, [&] { return oracle.make_inputs(probe); });
  if (!inputs) {
    return plain_result(probe.gate, Verdict::kError,
                        "the trusted side failed: " + inputs.error().to_string(), &probe);
  }
  if (!inputs->refused.empty())
    return plain_result(probe.gate, Verdict::kNotApplicable, inputs->refused, &probe);
  const ProbeOutcome outcome = calls_and_trusted(
      oracle, runner, probe, *inputs, contract,
      beside ? std::vector<Contract>{contract} : std::vector<Contract>{}, timings);
  if (!outcome.refused.empty())
    return plain_result(probe.gate, Verdict::kNotApplicable, outcome.refused, &probe);
  Judged how = Judged::kJudged;
  return judge_one(source, oracle, probe, *inputs, outcome, contract, &how, timings);
}

Probe shrink_timed(ProbeSource& source, Oracle& oracle, CandidateRunner& runner,
                   const Probe& failing, const Contract& contract, int max_runs, bool beside,
                   PipelineTimings* timings, const std::function<bool()>& within_limit) {
  const auto past_limit = [&] { return within_limit && !within_limit(); };
  Probe best = failing;
  int runs = 0;
  bool progress = true;
  while (progress && runs < max_runs) {
    progress = false;
    for (const Probe& p : source.simplifications(best, contract)) {
      if (runs >= max_runs || !runner.exhausted().empty() || past_limit()) break;
      if (p == best) continue;
      ++runs;
      const int timeouts = runner.timeouts();
      const Verdict v =
          judge_probe_timed(source, oracle, runner, p, contract, beside, timings).verdict;
      if (runner.timeouts() > timeouts || past_limit()) {
        progress = false;
        break;
      }
      if (v == Verdict::kFail) {
        best = p;
        progress = true;
        break;  // simplify the new best from its simplest variant again
      }
    }
  }
  if (!(best == failing) && best.label.find("(shrunk)") == std::string::npos)
    best.label += " (shrunk)";
  return best;
}

}  // namespace

GateResult judge_probe(ProbeSource& source, Oracle& oracle, CandidateRunner& runner,
                       const Probe& probe, const Contract& contract) {
  return judge_probe_timed(source, oracle, runner, probe, contract, false, nullptr);
}

Probe shrink_failing_probe(ProbeSource& source, Oracle& oracle, CandidateRunner& runner,
                           const Probe& failing, const Contract& contract, int max_runs) {
  return shrink_timed(source, oracle, runner, failing, contract, max_runs, false, nullptr, {});
}

PipelineReport run_pipeline(ProbeSource& source, Oracle& oracle, CandidateRunner& runner,
                            const Contract& contract, const PipelineOptions& options) {
  std::vector<ProfileId> profiles = options.profiles;
  if (profiles.empty()) profiles.push_back(contract.profile);
  const std::vector<GateId> gates = options.gates.empty()
                                        ? std::vector<GateId>(kAllGates.begin(), kAllGates.end())
                                        : options.gates;
  PipelineReport report;
  for (ProfileId p : profiles) report.profiles.push_back(ProfileResults{p, {}});
  const gates::RatioScratch scratch;  // the judges' ratio array, kept for the run
  GateRun run(source, oracle, runner, contract, options, profiles, report.stopped, report.timings);
  for (std::size_t g = 0; g < kAllGates.size(); ++g) {
    const GateId id = kAllGates[g];
    if (std::find(gates.begin(), gates.end(), id) == gates.end()) continue;
    if (options.progress) options.progress(fmt::format("{} ...", gate_code(id)));
    std::vector<GateResult> per;
    {
      Timed scope(&report.timings.per_gate[g]);
      per = run.run(id);
    }
    for (std::size_t k = 0; k < per.size(); ++k)
      report.profiles[k].results.push_back(std::move(per[k]));
  }
  return report;
}

}  // namespace kcv
