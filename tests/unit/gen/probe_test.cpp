// File: tests/unit/gen/probe_test.cpp
// Probe names and replay tokens: every enum value has one name that parses back, tokens are
// stable one-line JSON that round-trip exactly (full uint64 seed included), and malformed
// tokens are rejected with a message naming the offending field.
#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <string>

#include "kcv/probe.hpp"

namespace kcv {
namespace {

TEST(ProbeNames, EveryValueHasAUniqueNameThatParsesBack) {
  std::set<std::string_view> seen;
  for (Distribution d : all_distributions()) {
    EXPECT_TRUE(seen.insert(distribution_name(d)).second);
    EXPECT_EQ(parse_distribution(distribution_name(d)).value(), d);
  }
  EXPECT_EQ(all_distributions().size(), 20u);
  for (LayoutKind k : all_layout_kinds()) {
    EXPECT_EQ(parse_layout_kind(layout_name(k)).value(), k);
  }
  EXPECT_EQ(all_layout_kinds().size(), 6u);
  for (Special s : all_specials()) {
    EXPECT_EQ(parse_special(special_name(s)).value(), s);
  }
  EXPECT_EQ(all_specials().size(), 7u);
  const auto bad = parse_layout_kind("diagonal");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("diagonal"), std::string::npos);
}

Probe rich_probe() {
  Probe p;
  p.gate = GateId::kOrd03;
  p.label = "tile+1 N=257 \"quoted\" \xc3\xa9";
  p.seed = std::numeric_limits<uint64_t>::max();
  p.sizes = {{"M", 3}, {"N", 257}};
  const auto dists = all_distributions();
  const auto kinds = all_layout_kinds();
  for (std::size_t i = 0; i < dists.size(); ++i) {
    InputSpec in;
    in.dtype = static_cast<DType>(i % 7);
    in.dist = dists[i];
    in.layout = Layout{kinds[i % kinds.size()], static_cast<int64_t>(i + 1), static_cast<int64_t>(2 * i),
                       static_cast<int64_t>(i % 3)};
    p.inputs.push_back(in);
  }
  int k = 0;
  for (Special s : all_specials()) {
    p.injections.push_back(Injection{k % 2, 1000 + k, s});
    ++k;
  }
  p.repetitions = 8;
  p.shift_addresses = true;
  p.launch_configs = {{0, 1}, {64, 2}, {1024, 4}};
  p.concurrency = 3;
  p.randomize_guards = true;
  p.segments = {1, 150, 7};
  p.tags = {{"grade", "bf16"}, {"member", "gdn"}};
  return p;
}

TEST(ProbeToken, RoundTripsEveryFieldExactly) {
  const Probe p = rich_probe();
  const std::string token = probe_to_token(p);
  const Expected<Probe> back = probe_from_token(token);
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  EXPECT_EQ(back.value(), p);
  EXPECT_EQ(back->seed, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(probe_to_token(back.value()), token);
}

TEST(ProbeToken, IsOneStableLineInFieldOrder) {
  Probe p;
  p.seed = 42;
  p.sizes = {{"N", 8}, {"M", 2}};
  p.inputs = {InputSpec{}};
  const std::string token = probe_to_token(p);
  EXPECT_EQ(token.find('\n'), std::string::npos);
  EXPECT_EQ(token,
            "{\"gate\":\"CMP-01\",\"label\":\"\",\"seed\":42,\"sizes\":{\"M\":2,\"N\":8},"
            "\"inputs\":[{\"dtype\":\"f32\",\"dist\":\"normal\",\"layout\":{\"kind\":\"contiguous\","
            "\"step\":2,\"offset\":0,\"pad\":0}}],\"injections\":[],\"repetitions\":1,"
            "\"shift_addresses\":false,\"launch_configs\":[],\"concurrency\":1,\"randomize_guards\":false}");
}

TEST(ProbeToken, OptionalFieldsTakeTheirDefaults) {
  const auto p = probe_from_token(R"({"gate":"exc-01","seed":7,"sizes":{"N":4},"inputs":[{"dtype":"bf16","dist":"tiny"}]})");
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  EXPECT_EQ(p->gate, GateId::kExc01);
  EXPECT_EQ(p->inputs[0].dtype, DType::kBF16);
  EXPECT_EQ(p->inputs[0].layout, Layout{});
  EXPECT_EQ(p->repetitions, 1);
  EXPECT_TRUE(p->injections.empty());
}

// The error message of a bad token must name this field path.
struct BadToken {
  const char* token;
  const char* field;
};

TEST(ProbeToken, RejectsMalformedTokensNamingTheField) {
  const BadToken cases[] = {
      {R"({"gate":"CMP-01","seed":1,"sizes":{},"inputs":[{"dtype":"f8","dist":"normal"}]})", "inputs[0].dtype"},
      {R"({"gate":"CMP-01","seed":-1,"sizes":{},"inputs":[]})", "seed"},
      {R"({"gate":"CMP-01","seed":1.5,"sizes":{},"inputs":[]})", "seed"},
      {R"({"gate":"CMP-99","seed":1,"sizes":{},"inputs":[]})", "gate"},
      {R"({"seed":1,"sizes":{},"inputs":[]})", "gate"},
      {R"({"gate":"CMP-01","seed":1,"sizes":{"N":-3},"inputs":[]})", "sizes.N"},
      {R"({"gate":"CMP-01","seed":1,"sizes":{},"inputs":[],"repetitons":2})", "repetitons"},
      {R"({"gate":"CMP-01","seed":1,"sizes":{},"inputs":[],"repetitions":0})", "repetitions"},
      {R"({"gate":"CMP-01","seed":1,"sizes":{},"inputs":[{"dtype":"f32","dist":"normal","layout":{"kind":"sliced","step":0}}]})",
       "inputs[0].layout.step"},
      {R"({"gate":"CMP-01","seed":1,"sizes":{},"inputs":[],"injections":[{"input":0,"index":3,"value":"nan?"}]})",
       "injections[0].value"},
      {R"({"gate":"CMP-01","seed":1,"sizes":{},"inputs":[],"shift_addresses":1})", "shift_addresses"},
      {R"({"gate":"CMP-01","seed":1,"sizes":{},"inputs":{}})", "inputs"},
      {R"({"gate":"CMP-01","seed":1,"sizes":{},"inputs":[],"segments":[3,0]})", "segments[1]"},
      {R"({"gate":"CMP-01","seed":1,"sizes":{},"inputs":[],"tags":{"grade":16}})", "tags.grade"},
      {R"({"gate":"CMP-01","seed":1,"sizes":{},"inputs":[],"tags":["fp32"]})", "tags"},
  };
  for (const BadToken& c : cases) {
    const Expected<Probe> p = probe_from_token(c.token);
    ASSERT_FALSE(p.has_value()) << c.token;
    EXPECT_EQ(p.error().code, ErrorCode::kParse);
    EXPECT_NE(p.error().message.find(std::string("'") + c.field + "'"), std::string::npos)
        << c.token << " -> " << p.error().to_string();
  }
  const Expected<Probe> garbage = probe_from_token("{not json");
  ASSERT_FALSE(garbage.has_value());
  EXPECT_NE(garbage.error().message.find("JSON"), std::string::npos);
}

}  // namespace
}  // namespace kcv
