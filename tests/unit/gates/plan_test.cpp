// File: tests/unit/gates/plan_test.cpp
// Plan sanity over the whole op table: every probe of every gate for every op has one input spec
// per signature input, a size for every symbol, injections inside their tensors, the gate's ID
// and a distinct seed; plans are deterministic; a gate plans nothing exactly when it says why.
// Inputs are generated for the small probes to prove the probes are buildable.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "kcv/generate.hpp"
#include "unit/gates/synthetic.hpp"

namespace kcv {
namespace {

constexpr uint64_t kSeed = 0x6b6376;
constexpr int64_t kGenerateBelow = int64_t{1} << 16;  // generate inputs of probes up to this size

Contract default_contract(const OpSignature& sig) {
  Contract c;
  c.op = sig.name;
  return c;
}

void expect_probe_matches(const OpSignature& sig, const Probe& p, GateId id) {
  SCOPED_TRACE(sig.name + " " + std::string(gate_code(id)) + " '" + p.label + "'");
  EXPECT_EQ(p.gate, id);
  EXPECT_FALSE(p.label.empty());
  ASSERT_EQ(p.inputs.size(), sig.inputs.size());
  for (const auto* list : {&sig.inputs, &sig.outputs}) {
    for (const TensorSig& t : *list) {
      for (const std::string& d : t.dims) {
        ASSERT_TRUE(p.sizes.count(d)) << "missing size " << d;
        EXPECT_GE(p.sizes.at(d), 1) << d;
      }
    }
  }
  for (const Injection& inj : p.injections) {
    ASSERT_GE(inj.input, 0);
    ASSERT_LT(inj.input, static_cast<int>(sig.inputs.size()));
    EXPECT_GE(inj.index, 0);
    EXPECT_LT(inj.index, numel(shape_of(sig.inputs[static_cast<std::size_t>(inj.input)], p.sizes)));
  }
  EXPECT_GE(p.repetitions, 1);
  EXPECT_GE(p.concurrency, 1);
}

void expect_inputs_buildable(const OpSignature& sig, const Probe& p) {
  int64_t total = 0;
  for (const TensorSig& t : sig.inputs) total += numel(shape_of(t, p.sizes));
  if (total > kGenerateBelow) return;
  const std::vector<HostTensor> inputs = make_inputs(p, sig);
  ASSERT_EQ(inputs.size(), sig.inputs.size()) << p.label;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(inputs[i].shape(), shape_of(sig.inputs[i], p.sizes)) << sig.name << " " << p.label;
  }
}

TEST(GatePlans, EveryProbeMatchesItsOpSignature) {
  ASSERT_FALSE(all_ops().empty());
  for (const Op* op : all_ops()) {
    const OpSignature& sig = op->signature();
    const Contract c = default_contract(sig);
    for (GateId id : kAllGates) {
      const GateDef& def = gate_def(id);
      const std::string why = def.not_applicable_reason(sig, c);
      const std::vector<Probe> probes = def.plan(sig, c, kSeed);
      if (!why.empty() || id == GateId::kRes02) {
        EXPECT_TRUE(probes.empty()) << sig.name << " " << def.code << ": n/a yet planned";
        continue;
      }
      EXPECT_FALSE(probes.empty()) << sig.name << " " << def.code << ": applies but plans nothing";
      std::set<uint64_t> seeds;
      for (const Probe& p : probes) {
        expect_probe_matches(sig, p, id);
        seeds.insert(p.seed);
        expect_inputs_buildable(sig, p);
      }
      EXPECT_EQ(seeds.size(), probes.size()) << sig.name << " " << def.code << ": repeated seeds";
      EXPECT_EQ(def.plan(sig, c, kSeed), probes) << sig.name << " " << def.code << ": not deterministic";
    }
  }
}

TEST(GatePlans, SeedChangesEveryProbeSeedButNotTheShapes) {
  const Op* op = find_op("softmax");
  ASSERT_NE(op, nullptr);
  const Contract c = default_contract(op->signature());
  const auto a = gate_def(GateId::kCmp01).plan(op->signature(), c, 1);
  const auto b = gate_def(GateId::kCmp01).plan(op->signature(), c, 2);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t k = 0; k < a.size(); ++k) {
    EXPECT_NE(a[k].seed, b[k].seed);
    EXPECT_EQ(a[k].sizes, b[k].sizes);
  }
}

TEST(GatePlans, NotApplicableReasonsAreNonEmptyWhereNothingIsPlanned) {
  for (const Op* op : all_ops()) {
    const OpSignature& sig = op->signature();
    Contract c = default_contract(sig);
    c.deterministic = false;
    for (GateId id : kAllGates) {
      if (id == GateId::kRes02) continue;
      const GateDef& def = gate_def(id);
      if (def.plan(sig, c, kSeed).empty()) {
        EXPECT_FALSE(def.not_applicable_reason(sig, c).empty()) << sig.name << " " << def.code;
      }
    }
  }
}

TEST(GatePlans, Ord02RepeatsAtShiftedAddressesAndRes01RandomizesGuards) {
  const Op* op = find_op("sum");
  ASSERT_NE(op, nullptr);
  const Contract c = default_contract(op->signature());
  for (const Probe& p : gate_def(GateId::kOrd02).plan(op->signature(), c, kSeed)) {
    EXPECT_GE(p.repetitions, 8);
    EXPECT_TRUE(p.shift_addresses);
  }
  for (const Probe& p : gate_def(GateId::kRes01).plan(op->signature(), c, kSeed)) {
    EXPECT_GE(p.repetitions, 2);
    EXPECT_TRUE(p.randomize_guards);
  }
}

TEST(GatePlans, Ord03SweepsDeclaredOrDefaultConfigsAndConcurrency) {
  const Op* op = find_op("sum");
  ASSERT_NE(op, nullptr);
  Contract c = default_contract(op->signature());
  const auto probes = gate_def(GateId::kOrd03).plan(op->signature(), c, kSeed);
  EXPECT_TRUE(std::any_of(probes.begin(), probes.end(), [](const Probe& p) { return p.launch_configs.size() == 15; }));
  EXPECT_TRUE(std::any_of(probes.begin(), probes.end(), [](const Probe& p) { return p.concurrency > 1; }));
  c.launch_configs = {LaunchConfig{32, 1}, LaunchConfig{64, 2}};
  for (const Probe& p : gate_def(GateId::kOrd03).plan(op->signature(), c, kSeed)) {
    if (!p.launch_configs.empty()) {
      EXPECT_EQ(p.launch_configs, c.launch_configs);
    }
  }
}

TEST(GatePlans, FixedReductionDimIsNeverVaried) {
  const Op* op = find_op("sum");
  ASSERT_NE(op, nullptr);
  Contract c = default_contract(op->signature());
  c.fixed_dims = {"N"};
  const int64_t n = op->signature().reference_sizes.at("N");
  for (GateId id : {GateId::kOrd01, GateId::kPrc02, GateId::kExc01, GateId::kRes01}) {
    for (const Probe& p : gate_def(id).plan(op->signature(), c, kSeed)) {
      EXPECT_EQ(p.sizes.at("N"), n) << gate_code(id) << " " << p.label;
    }
  }
}

TEST(GatePlans, EveryExc01ProbeInjectsAndOtherGatesDoNotExceptTheHugeElement) {
  for (const Op* op : all_ops()) {
    const OpSignature& sig = op->signature();
    const Contract c = default_contract(sig);
    for (const Probe& p : gate_def(GateId::kExc01).plan(sig, c, kSeed)) {
      EXPECT_FALSE(p.injections.empty()) << sig.name << " " << p.label;
    }
    for (GateId id : {GateId::kCmp01, GateId::kCmp02, GateId::kPrc02, GateId::kRes01}) {
      for (const Probe& p : gate_def(id).plan(sig, c, kSeed)) {
        EXPECT_TRUE(p.injections.empty()) << sig.name << " " << gate_code(id) << " " << p.label;
      }
    }
  }
}

TEST(GatePlans, Exc01CoversMaskedSoftmaxRowsAndBinaryOperands) {
  const Op* softmax = find_op("softmax");
  const Op* maximum = find_op("maximum");
  ASSERT_NE(softmax, nullptr);
  ASSERT_NE(maximum, nullptr);
  const auto sm = gate_def(GateId::kExc01).plan(softmax->signature(), default_contract(softmax->signature()), kSeed);
  EXPECT_TRUE(std::any_of(sm.begin(), sm.end(), [](const Probe& p) { return p.label.find("fully -Inf") != std::string::npos; }));
  const auto mx = gate_def(GateId::kExc01).plan(maximum->signature(), default_contract(maximum->signature()), kSeed);
  EXPECT_TRUE(std::any_of(mx.begin(), mx.end(), [](const Probe& p) {
    return std::any_of(p.injections.begin(), p.injections.end(), [](const Injection& i) { return i.input == 1; });
  }));
}

}  // namespace
}  // namespace kcv
