// File: tests/unit/verify/pipeline_test.cpp
// The one loop, on fakes: each probe's calls are made once and judged under every profile; a
// probe the reference or the runner refuses does not count; a trusted-side failure is an error,
// never a failure; a probe without a value claim leaves the value gates not applicable; an
// exhausted candidate stops the plans; a failure carries its finding and scope and shrinks; trusted
// results made beside the candidate's calls give the same verdicts, on another thread, meanwhile.
#include "kcv/pipeline.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

namespace kcv {
namespace {

const std::vector<double> kY = {1.0, 2.0, 3.0, 4.0};

// Identity on four f32 elements; probes "a" (reference) and "b" (another shape, label only).
class FakeSource final : public ProbeSource {
 public:
  FakeSource() {
    sig_.name = "identity";
    sig_.inputs = {TensorSig{"x", {"N"}, ValueDomain::kAny}};
    sig_.outputs = {TensorSig{"y", {"N"}, ValueDomain::kAny}};
  }
  const OpSignature& signature() const override { return sig_; }
  std::string not_applicable_reason(GateId, const Contract&) const override { return {}; }
  std::vector<Probe> plan(GateId id, const Contract&, uint64_t seed) const override {
    std::vector<Probe> out;
    for (const char* label : {"a", "b"}) {
      Probe p;
      p.gate = id;
      p.label = label;
      p.seed = seed;
      p.inputs = {InputSpec{DType::kF32, Distribution::kDrawn, {}}};
      if (std::string(label) == "b") p.sizes = {{"N", 4}};
      out.push_back(p);
    }
    return out;
  }
  ProbeScope scope_of(const Probe& p) const override {
    return p.sizes.empty() ? ProbeScope::kReference : ProbeScope::kShape;
  }
  std::vector<Probe> simplifications(const Probe& failing, const Contract&) const override {
    if (failing.label != "b") return {};
    Probe p = failing;
    p.label = "b-small";
    return {p};
  }

 private:
  OpSignature sig_;
};

class FakeOracle final : public Oracle {
 public:
  std::string refuse_label;  // make_inputs refuses this probe
  std::string fail_label;    // evaluate fails for this probe (harness)
  bool no_claim = false;
  Expected<ProbeInputs> make_inputs(const Probe& probe) override {
    ProbeInputs in;
    in.tensors = {make_tensor(DType::kF32, {4}, kY)};
    in.outputs = {OutputSpec{DType::kF32, {4}}};
    if (probe.label == refuse_label) in.refused = "the reference refuses it";
    return in;
  }
  Expected<SharedOracleResult> evaluate(const Probe& probe, const ProbeInputs&,
                                        const Contract& c) override {
    if (probe.label == fail_label) return make_error(ErrorCode::kInternal, "reference worker died");
    OracleResult r;
    OracleOutput o;
    o.dtype = DType::kF32;
    o.shape = {4};
    o.value = kY;
    // strict's bound is tight, pytorch-eager's loose: the same calls pass one and fail the other.
    o.tau.assign(4, c.profile == ProfileId::kStrict ? 1e-6 : 1e-1);
    r.outputs.push_back(std::move(o));
    if (no_claim) r.no_value_claim = "no fp64 claim here";
    return share(std::move(r));
  }
};

class FakeRunner final : public CandidateRunner {
 public:
  int runs = 0;
  int exhaust_after = -1;
  double error = 1e-3;                 // added to every element
  std::chrono::milliseconds takes{0};  // each run's wall time
  // When set: the error of the run numbered `run` (from 1) of `probe`, in place of `error`.
  std::function<double(const Probe& probe, int run)> error_of;
  std::string refuse_label;  // the machine cannot run the candidate at this probe
  std::string_view name() const override { return "fake"; }
  ProbeOutcome run(const Probe& probe, const ProbeInputs&, const Contract&) override {
    ++runs;
    std::this_thread::sleep_for(takes);
    CallRecord c;
    std::vector<double> y = kY;
    for (double& v : y) v += error_of ? error_of(probe, runs) : error;
    c.outputs.push_back(make_tensor(DType::kF32, {4}, y));
    if (probe.label == refuse_label) {
      c.status = CallStatus::kException;  // what the machine's limit left of the call
      return ProbeOutcome{{c}, "out of this machine's memory at this shape"};
    }
    return ProbeOutcome{{c}};
  }
  Expected<ResourceFacts> resources() override {
    return ResourceFacts{std::nullopt, "a CPU kernel"};
  }
  std::string exhausted() const override {
    return exhaust_after >= 0 && runs >= exhaust_after ? "the candidate timed out twice" : "";
  }
};

PipelineOptions cmp01_under(std::vector<ProfileId> profiles) {
  PipelineOptions o;
  o.gates = {GateId::kCmp01};
  o.profiles = std::move(profiles);
  return o;
}

TEST(Pipeline, CallsOnceJudgesUnderEveryProfile) {
  FakeSource source;
  FakeOracle oracle;
  FakeRunner runner;
  const PipelineReport r =
      run_pipeline(source, oracle, runner, Contract{},
                   cmp01_under({ProfileId::kStrict, ProfileId::kPytorchEager}));
  ASSERT_EQ(r.profiles.size(), 2u);
  const GateResult& strict = r.profiles[0].results.at(0);
  const GateResult& eager = r.profiles[1].results.at(0);
  EXPECT_EQ(strict.verdict, Verdict::kFail);
  EXPECT_EQ(strict.finding, Finding::kValueOverBound);
  EXPECT_EQ(strict.scope, ProbeScope::kReference);  // probe "a" failed first
  EXPECT_EQ(eager.verdict, Verdict::kPass);
  EXPECT_EQ(eager.probes_run, 2);
  // Two probes, each called once for both profiles (the shrink of "a" proposes nothing).
  EXPECT_EQ(runner.runs, 2);
}

TEST(Pipeline, TimesEachStepAndEachGate) {
  FakeSource source;
  FakeOracle oracle;
  FakeRunner runner;
  runner.takes = std::chrono::milliseconds(20);
  PipelineOptions o = cmp01_under({ProfileId::kStrict});
  const PipelineReport r = run_pipeline(source, oracle, runner, Contract{}, o);
  const PipelineTimings& t = r.timings;
  // Probe "a" fails strict and stops the gate: one call, no simplification to try.
  ASSERT_EQ(runner.runs, 1);
  EXPECT_GE(t.candidate, 0.019);
  EXPECT_GE(t.inputs, 0.0);
  EXPECT_GE(t.oracle, 0.0);
  EXPECT_GE(t.judge, 0.0);
  EXPECT_LT(t.inputs + t.oracle + t.judge, t.candidate);  // the fakes take no time of their own
  const double cmp01 = t.per_gate[0];
  EXPECT_GE(cmp01, t.candidate + t.inputs + t.oracle + t.judge);
  for (std::size_t g = 1; g < t.per_gate.size(); ++g) EXPECT_EQ(t.per_gate[g], 0.0);

  // A failing "b" is shrunk: the shrink's calls count as calls and as shrinking.
  FakeRunner slow;
  slow.takes = std::chrono::milliseconds(20);
  slow.error = 0;
  FakeSource shrinking;
  PipelineOptions all = cmp01_under({ProfileId::kStrict});
  class FailsB final : public Oracle {
   public:
    Expected<ProbeInputs> make_inputs(const Probe& p) override { return base.make_inputs(p); }
    Expected<SharedOracleResult> evaluate(const Probe& p, const ProbeInputs& in,
                                          const Contract& c) override {
      auto r = base.evaluate(p, in, c);
      if (!r || p.label == "a") return r;
      OracleResult changed = **r;
      changed.outputs[0].value[0] += 1.0;  // "b" and "b-small" fail
      return share(std::move(changed));
    }
    FakeOracle base;
  } fails_b;
  const PipelineReport s = run_pipeline(shrinking, fails_b, slow, Contract{}, all);
  EXPECT_EQ(s.profiles[0].results.at(0).verdict, Verdict::kFail);
  ASSERT_EQ(slow.runs, 4);  // a, b, b-small (the shrink), b-small again (its evidence)
  EXPECT_GE(s.timings.shrink, 2 * 0.019);
  EXPECT_LE(s.timings.shrink, s.timings.per_gate[0]);
  EXPECT_GE(s.timings.candidate, 4 * 0.019);
}

TEST(Pipeline, ARefusedProbeDoesNotCount) {
  FakeSource source;
  FakeOracle oracle;
  oracle.refuse_label = "a";
  FakeRunner runner;
  runner.error = 0;
  const PipelineReport r =
      run_pipeline(source, oracle, runner, Contract{}, cmp01_under({ProfileId::kStrict}));
  const GateResult& g = r.profiles[0].results.at(0);
  EXPECT_EQ(g.verdict, Verdict::kPass);
  EXPECT_EQ(g.probes_run, 1);
  EXPECT_EQ(g.probes_refused, 1);
  EXPECT_EQ(runner.runs, 1);  // the refused probe's candidate is never called
}

TEST(Pipeline, AProbeTheRunnerRefusesFailsNothingAndPassesNothing) {
  FakeSource source;
  FakeOracle oracle;
  FakeRunner runner;
  runner.error = 0;
  runner.refuse_label = "b";
  const PipelineReport r =
      run_pipeline(source, oracle, runner, Contract{}, cmp01_under({ProfileId::kStrict}));
  const GateResult& g = r.profiles[0].results.at(0);
  // "a" passed and "b"'s failed call is not read, yet the candidate was not judged at "b"
  EXPECT_EQ(g.verdict, Verdict::kError);
  EXPECT_EQ(g.finding, Finding::kNone);
  EXPECT_EQ(g.probes_run, 1);
  EXPECT_EQ(g.probes_refused, 0);
  EXPECT_EQ(g.probes_not_run, 1);
  EXPECT_NE(g.reason.find("not judged at every probe: 1 probe(s)"), std::string::npos) << g.reason;
  EXPECT_NE(g.reason.find("out of this machine's memory"), std::string::npos) << g.reason;
  // a failure at another probe stands
  FakeRunner wrong;
  wrong.refuse_label = "a";  // and wrong.error, 1e-3, is over strict's bound at "b"
  const PipelineReport f =
      run_pipeline(source, oracle, wrong, Contract{}, cmp01_under({ProfileId::kStrict}));
  EXPECT_EQ(f.profiles[0].results.at(0).verdict, Verdict::kFail);
  EXPECT_EQ(f.profiles[0].results.at(0).probes_not_run, 1);
  // judged alone (a shrink's simplification, kcv replay): not applicable, never a failure
  EXPECT_EQ(judge_probe(source, oracle, runner, source.plan(GateId::kCmp01, {}, 1)[1], {}).verdict,
            Verdict::kNotApplicable);
}

TEST(Pipeline, ATrustedSideFailureIsAnErrorNeverAFailure) {
  FakeSource source;
  FakeOracle oracle;
  oracle.fail_label = "a";
  FakeRunner runner;
  runner.error = 0;
  const PipelineReport r =
      run_pipeline(source, oracle, runner, Contract{}, cmp01_under({ProfileId::kStrict}));
  const GateResult& g = r.profiles[0].results.at(0);
  EXPECT_EQ(g.verdict, Verdict::kError);
  EXPECT_EQ(g.finding, Finding::kNone);
  EXPECT_NE(g.reason.find("trusted side"), std::string::npos) << g.reason;
}

TEST(Pipeline, NoValueClaimLeavesValueGatesNotApplicable) {
  FakeSource source;
  FakeOracle oracle;
  oracle.no_claim = true;
  FakeRunner runner;
  PipelineOptions o = cmp01_under({ProfileId::kStrict});
  o.gates = {GateId::kCmp01, GateId::kCmp02};
  const PipelineReport r = run_pipeline(source, oracle, runner, Contract{}, o);
  EXPECT_EQ(r.profiles[0].results.at(0).verdict, Verdict::kNotApplicable);
  EXPECT_NE(r.profiles[0].results.at(0).reason.find("no fp64 claim"), std::string::npos);
  EXPECT_EQ(r.profiles[0].results.at(1).verdict, Verdict::kPass);  // CMP-02 is structural
}

TEST(Pipeline, AnExhaustedCandidateStopsThePlans) {
  FakeSource source;
  FakeOracle oracle;
  FakeRunner runner;
  runner.error = 0;
  runner.exhaust_after = 1;
  const PipelineReport r =
      run_pipeline(source, oracle, runner, Contract{}, cmp01_under({ProfileId::kStrict}));
  EXPECT_EQ(r.stopped, "the candidate timed out twice");
  const GateResult& g = r.profiles[0].results.at(0);
  EXPECT_EQ(g.verdict, Verdict::kError);  // probe b was not run: not a pass
  EXPECT_EQ(runner.runs, 1);
}

TEST(Pipeline, AFailureShrinksToItsSimplestFailingProbe) {
  FakeSource source;
  FakeOracle oracle;
  oracle.refuse_label = "a";  // so "b" is the failing probe, and "b-small" its simplification
  FakeRunner runner;
  const PipelineReport r =
      run_pipeline(source, oracle, runner, Contract{}, cmp01_under({ProfileId::kStrict}));
  const GateResult& g = r.profiles[0].results.at(0);
  ASSERT_EQ(g.verdict, Verdict::kFail);
  ASSERT_TRUE(g.failing_probe);
  EXPECT_EQ(g.failing_probe->label, "b-small (shrunk)");
  EXPECT_EQ(g.scope, ProbeScope::kShape);
}

TEST(Pipeline, Res02ComesFromTheRunnersResources) {
  FakeSource source;
  FakeOracle oracle;
  FakeRunner runner;
  PipelineOptions o;
  o.gates = {GateId::kRes02};
  const PipelineReport r = run_pipeline(source, oracle, runner, Contract{}, o);
  EXPECT_EQ(r.profiles[0].results.at(0).verdict, Verdict::kNotApplicable);
  EXPECT_EQ(r.profiles[0].results.at(0).reason, "a CPU kernel");
}

TEST(Pipeline, ACallTimedOutPastTheTimeLimitIsNotRunNeverAFailure) {
  // The call's allowance was what was left of the time limit: its timeout is the harness's.
  class TimesOut final : public CandidateRunner {
   public:
    bool* time_up = nullptr;
    std::string_view name() const override { return "times out"; }
    ProbeOutcome run(const Probe&, const ProbeInputs&, const Contract&) override {
      *time_up = true;
      CallRecord c;
      c.status = CallStatus::kTimeout;
      c.message = "no result within 1 ms";
      return ProbeOutcome{{c}};
    }
    Expected<ResourceFacts> resources() override { return ResourceFacts{std::nullopt, "cpu"}; }
  };
  for (const bool beside : {false, true}) {
    FakeSource source;
    FakeOracle oracle;
    bool time_up = false;
    TimesOut runner;
    runner.time_up = &time_up;
    PipelineOptions o = cmp01_under({ProfileId::kStrict});
    o.keep_going = [&] { return !time_up; };
    o.evaluate_beside_calls = beside;
    const PipelineReport r = run_pipeline(source, oracle, runner, Contract{}, o);
    const GateResult& g = r.profiles[0].results.at(0);
    EXPECT_EQ(g.verdict, Verdict::kError) << beside;
    EXPECT_EQ(g.finding, Finding::kNone) << beside;
    EXPECT_EQ(r.stopped, "the time limit was reached") << beside;
  }
}

// Every profile's CMP-01 is an error whose reason is the stop's ("not run: ..."), never a
// verdict on the candidate, and the report says why probing stopped.
void ExpectStoppedAfterTheFirstProbe(const PipelineReport& r, const std::string& why, bool beside) {
  for (const ProfileResults& p : r.profiles) {
    const GateResult& g = p.results.at(0);
    EXPECT_EQ(g.verdict, Verdict::kError) << beside;
    EXPECT_EQ(g.reason, "not run: " + why) << beside;
    EXPECT_EQ(g.finding, Finding::kNone) << beside;
  }
  EXPECT_EQ(r.stopped, why) << beside;
}

TEST(Pipeline, ATrustedFailurePastTheTimeLimitIsNotRunNotAHarnessFailure) {
  // The trusted side was given what was left of the limit too: its failure then is the limit's.
  // Before the limit a trusted failure stays "the trusted side failed" (the test above).
  for (const bool beside : {false, true}) {
    FakeSource source;
    FakeOracle oracle;
    oracle.fail_label = "a";
    FakeRunner runner;
    runner.error = 0;
    PipelineOptions o = cmp01_under({ProfileId::kStrict, ProfileId::kPytorchEager});
    o.keep_going = [&] { return runner.runs == 0; };  // the limit passes with the first call
    o.evaluate_beside_calls = beside;
    const PipelineReport r = run_pipeline(source, oracle, runner, Contract{}, o);
    ExpectStoppedAfterTheFirstProbe(r, "the time limit was reached", beside);
    EXPECT_EQ(runner.runs, 1) << beside;  // probe "b" was never run
  }
}

TEST(Pipeline, AbandonStopsTheProbesLeftAndSaysWhy) {
  // The caller's reason to stop (the audit: the candidate struck the trusted reference) is asked
  // between probes: after the first call the second probe is not run, and the gate is an error
  // ("not run"), never a verdict on the candidate; nothing is shrunk.
  for (const bool beside : {false, true}) {
    FakeSource source;
    FakeOracle oracle;
    FakeRunner runner;
    runner.error = 0;
    PipelineOptions o = cmp01_under({ProfileId::kStrict, ProfileId::kPytorchEager});
    o.abandon = [&]() -> std::string { return runner.runs > 0 ? "struck" : ""; };
    o.evaluate_beside_calls = beside;
    const PipelineReport r = run_pipeline(source, oracle, runner, Contract{}, o);
    ExpectStoppedAfterTheFirstProbe(r, "struck", beside);
    EXPECT_EQ(runner.runs, 1) << beside;
  }
}

TEST(Pipeline, AShrunkProbeJudgedAcrossTheTimeLimitLeavesTheOriginalEvidence) {
  // "b" fails strict (run 2) and shrinks to "b-small" (run 3), which the pipeline judges again
  // for its evidence (run 4). When the limit passes with run 3 or run 4, that run had what was
  // left of the limit: its failure is not taken, and "b"'s own evidence stands.
  for (const int limit_run : {3, 4}) {
    FakeSource source;
    FakeOracle oracle;
    FakeRunner runner;
    runner.error_of = [](const Probe& p, int run) {
      return p.label == "a" ? 0.0 : run >= 3 ? 100.0 : 1e-3;
    };
    PipelineOptions o = cmp01_under({ProfileId::kStrict});
    o.keep_going = [&] { return runner.runs < limit_run; };
    const PipelineReport r = run_pipeline(source, oracle, runner, Contract{}, o);
    const GateResult& g = r.profiles.at(0).results.at(0);
    EXPECT_EQ(g.verdict, Verdict::kFail) << limit_run;
    ASSERT_TRUE(g.failing_probe.has_value()) << limit_run;
    EXPECT_EQ(g.failing_probe->label, "b") << limit_run;
    EXPECT_LT(g.evidence.candidate_value, 10.0) << limit_run;  // "b"'s (error 1e-3), not 100
    EXPECT_EQ(runner.runs, limit_run) << limit_run;
  }
  // Within the limit the shrunk probe's evidence replaces it.
  FakeSource source;
  FakeOracle oracle;
  FakeRunner runner;
  runner.error_of = [](const Probe& p, int run) {
    return p.label == "a" ? 0.0 : run >= 3 ? 100.0 : 1e-3;
  };
  const PipelineReport r =
      run_pipeline(source, oracle, runner, Contract{}, cmp01_under({ProfileId::kStrict}));
  const GateResult& g = r.profiles.at(0).results.at(0);
  ASSERT_TRUE(g.failing_probe.has_value());
  EXPECT_EQ(g.failing_probe->label, "b-small (shrunk)");
  EXPECT_GT(g.evidence.candidate_value, 100.0);
}

// FakeOracle (b and b-small fail strict and eager alike) with a memo per probe and profile, as
// ModelOracle keeps one: it records when and on which thread each result was made.
class MemoOracle final : public Oracle {
 public:
  using Clock = std::chrono::steady_clock;
  struct Made {
    std::thread::id thread;
    Clock::time_point begin, end;
  };
  std::chrono::milliseconds takes{0};
  Expected<ProbeInputs> make_inputs(const Probe& p) override { return base.make_inputs(p); }
  Expected<SharedOracleResult> evaluate(const Probe& p, const ProbeInputs& in,
                                        const Contract& c) override {
    const auto key = std::make_tuple(p.label, p.sizes, c.profile);
    {
      std::lock_guard lock(mutex);
      if (auto it = memo.find(key); it != memo.end()) return it->second;
    }
    const auto begin = Clock::now();
    std::this_thread::sleep_for(takes);
    auto r = base.evaluate(p, in, c);
    if (!r) return r;
    OracleResult changed = **r;
    if (p.label != "a") changed.outputs[0].value[0] += 1.0;
    SharedOracleResult shared = share(std::move(changed));
    std::lock_guard lock(mutex);
    made.push_back({p.label, {std::this_thread::get_id(), begin, Clock::now()}});
    memo.emplace(key, shared);
    return shared;
  }
  FakeOracle base;
  std::mutex mutex;
  std::map<std::tuple<std::string, std::map<std::string, int64_t>, ProfileId>, SharedOracleResult>
      memo;
  std::vector<std::pair<std::string, Made>> made;
};

// FakeRunner that records when and on which thread each probe's calls ran.
class TimedRunner final : public CandidateRunner {
 public:
  std::chrono::milliseconds takes{0};
  std::vector<std::pair<std::string, MemoOracle::Made>> ran;
  std::string_view name() const override { return "timed"; }
  ProbeOutcome run(const Probe& p, const ProbeInputs& in, const Contract& c) override {
    const auto begin = MemoOracle::Clock::now();
    ProbeOutcome o = base.run(p, in, c);
    std::this_thread::sleep_for(takes);
    ran.push_back({p.label, {std::this_thread::get_id(), begin, MemoOracle::Clock::now()}});
    return o;
  }
  Expected<ResourceFacts> resources() override { return base.resources(); }
  FakeRunner base;
};

TEST(Pipeline, TrustedResultsBesideTheCallsGiveTheSameVerdicts) {
  const std::vector<ProfileId> profiles = {ProfileId::kStrict, ProfileId::kPytorchEager};
  PipelineReport serial, beside;
  std::size_t serial_made = 0;
  for (const bool on : {false, true}) {
    FakeSource source;
    MemoOracle oracle;
    TimedRunner runner;
    runner.base.error = 0;
    PipelineOptions o = cmp01_under(profiles);
    o.evaluate_beside_calls = on;
    PipelineReport r = run_pipeline(source, oracle, runner, Contract{}, o);
    if (!on) {
      serial = std::move(r);
      serial_made = oracle.made.size();
      EXPECT_EQ(serial.timings.oracle_beside, 0.0);
      continue;
    }
    beside = std::move(r);
    EXPECT_EQ(oracle.made.size(), serial_made);  // each result made once, as without
  }
  ASSERT_EQ(serial.profiles.size(), beside.profiles.size());
  for (std::size_t k = 0; k < profiles.size(); ++k) {
    const GateResult& a = serial.profiles[k].results.at(0);
    const GateResult& b = beside.profiles[k].results.at(0);
    EXPECT_EQ(a.verdict, Verdict::kFail);  // b fails, and shrinks to b-small
    EXPECT_EQ(b.verdict, a.verdict);
    EXPECT_EQ(b.reason, a.reason);
    EXPECT_EQ(b.evidence.worst_ratio, a.evidence.worst_ratio);
    EXPECT_EQ(b.probes_run, a.probes_run);
    ASSERT_TRUE(a.failing_probe && b.failing_probe);
    EXPECT_EQ(b.failing_probe->label, a.failing_probe->label);
    EXPECT_EQ(b.failing_probe->label, "b-small (shrunk)");
  }
}

TEST(Pipeline, TrustedResultsBesideTheCallsAreMadeMeanwhileOnAnotherThread) {
  FakeSource source;
  MemoOracle oracle;
  oracle.takes = std::chrono::milliseconds(50);
  TimedRunner runner;
  runner.takes = std::chrono::milliseconds(150);
  runner.base.error = 0;
  PipelineOptions o = cmp01_under({ProfileId::kStrict, ProfileId::kPytorchEager});
  o.shrink = false;
  o.evaluate_beside_calls = true;
  const PipelineReport r = run_pipeline(source, oracle, runner, Contract{}, o);
  ASSERT_EQ(runner.ran.size(), 2u);  // probes a and b
  for (const auto& [label, call] : runner.ran) {
    int made = 0;
    for (const auto& [made_label, m] : oracle.made) {
      if (made_label != label) continue;
      ++made;
      EXPECT_NE(m.thread, call.thread) << label;
      EXPECT_LT(m.begin, call.end) << label;  // begun while the calls ran
    }
    EXPECT_EQ(made, 2) << label;  // under both profiles, before the judges asked
  }
  // Two probes' two results of 50 ms each hid behind 150 ms of calls each.
  EXPECT_GT(r.timings.oracle_beside, 0.1);
  EXPECT_LT(r.timings.oracle, 0.1);
}

}  // namespace
}  // namespace kcv
