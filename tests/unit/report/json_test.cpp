// File: tests/unit/report/json_test.cpp
// The JSON report parses, carries the schema header, and round-trips every field of every gate
// (probe tokens back into equal probes, contracts back into contracts); non-finite numbers are
// strings.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "unit/report/sample_report.hpp"

namespace kcv {
namespace {

using nlohmann::json;

json parsed(const std::vector<VerifyReport>& reports) { return json::parse(render_json(reports)); }

TEST(JsonReport, HasTheSchemaHeader) {
  const json doc = parsed({testing::sample_report()});
  EXPECT_EQ(doc.at("schema_version").get<int>(), kReportSchemaVersion);
  EXPECT_EQ(doc.at("tool").get<std::string>(), "kcv");
  EXPECT_EQ(doc.at("kcv_version").get<std::string>(), std::string(kcv_version()));
  ASSERT_EQ(doc.at("reports").size(), 1u);
}

TEST(JsonReport, RoundTripsTheReportFields) {
  const VerifyReport r = testing::sample_report();
  const json j = parsed({r}).at("reports").at(0);
  EXPECT_EQ(j.at("kernel").get<std::string>(), r.kernel);
  EXPECT_EQ(j.at("op").get<std::string>(), r.op);
  EXPECT_EQ(j.at("seed").get<uint64_t>(), r.seed);
  EXPECT_EQ(j.at("generator_version").get<int>(), r.generator_version);
  EXPECT_EQ(j.at("executor").get<std::string>(), r.executor);
  EXPECT_FALSE(j.at("passed").get<bool>());
  auto contract = parse_contract(j.at("contract").dump());
  ASSERT_TRUE(contract) << contract.error().to_string();
  EXPECT_EQ(contract_to_json(*contract), contract_to_json(r.contract));
}

TEST(JsonReport, RoundTripsEveryGate) {
  const VerifyReport r = testing::sample_report();
  const json gates = parsed({r}).at("reports").at(0).at("gates");
  ASSERT_EQ(gates.size(), r.results.size());
  for (std::size_t i = 0; i < gates.size(); ++i) {
    const GateResult& g = r.results[i];
    const json& j = gates[i];
    EXPECT_EQ(j.at("gate").get<std::string>(), gate_code(g.gate));
    EXPECT_EQ(j.at("reason").get<std::string>(), g.reason);
    EXPECT_EQ(j.at("probes_run").get<int>(), g.probes_run);
    const json& e = j.at("evidence");
    EXPECT_EQ(e.at("summary").get<std::string>(), g.evidence.summary);
    EXPECT_EQ(e.at("worst_index").get<int64_t>(), g.evidence.worst_index);
    EXPECT_EQ(e.at("violations").get<int64_t>(), g.evidence.violations);
    EXPECT_EQ(e.at("ratio_quantiles").get<std::vector<double>>(), g.evidence.ratio_quantiles);
    if (g.failing_probe) {
      auto probe = probe_from_token(j.at("failing_probe").get<std::string>());
      ASSERT_TRUE(probe) << probe.error().to_string();
      EXPECT_EQ(*probe, *g.failing_probe);
      EXPECT_NE(j.at("replay").get<std::string>().find("kcv replay"), std::string::npos);
    } else {
      EXPECT_TRUE(j.at("failing_probe").is_null());
      EXPECT_TRUE(j.at("replay").is_null());
    }
  }
}

TEST(JsonReport, WritesVerdictsAsSchemaWords) {
  const json gates = parsed({testing::sample_report()}).at("reports").at(0).at("gates");
  EXPECT_EQ(gates[0].at("verdict"), "fail");
  EXPECT_EQ(gates[1].at("verdict"), "pass");
  EXPECT_EQ(gates[8].at("verdict"), "error");
  EXPECT_EQ(gates[11].at("verdict"), "not_applicable");
}

TEST(JsonReport, EncodesNonFiniteNumbersAsStrings) {
  const json e = parsed({testing::sample_report()}).at("reports").at(0).at("gates").at(0).at("evidence");
  EXPECT_EQ(e.at("candidate_value"), "nan");
  EXPECT_EQ(e.at("oracle_value"), "-inf");
  EXPECT_EQ(e.at("worst_ratio"), "inf");
  EXPECT_TRUE(e.at("bits_lost").is_number());
}

TEST(JsonReport, ReplayBelongsToItsOwnGate) {
  const VerifyReport r = testing::sample_report();
  const json gates = parsed({r}).at("reports").at(0).at("gates");
  EXPECT_EQ(gates[0].at("replay").get<std::string>(), r.replay_lines[0]);
  EXPECT_EQ(gates[6].at("replay").get<std::string>(), r.replay_lines[1]);
}

TEST(JsonReport, ListsEveryReport) {
  VerifyReport passing = testing::sample_report();
  passing.kernel = "control.sample";
  for (GateResult& g : passing.results) {
    if (g.verdict == Verdict::kFail || g.verdict == Verdict::kError) g.verdict = Verdict::kPass;
  }
  const json reports = parsed({testing::sample_report(), passing}).at("reports");
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_FALSE(reports[0].at("passed").get<bool>());
  EXPECT_TRUE(reports[1].at("passed").get<bool>());
  EXPECT_EQ(reports[1].at("kernel"), "control.sample");
}

}  // namespace
}  // namespace kcv
