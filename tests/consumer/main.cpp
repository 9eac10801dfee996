// File: tests/consumer/main.cpp
// Calls kcv through its installed headers and library: gate codes, a contract parse and its
// round trip, a profile lookup. Exits non-zero when any answer is wrong, so the find_package
// test proves both that it links and that the linked library works.
#include <cstdio>
#include <string>

#include <kcv/contract.hpp>
#include <kcv/gate_id.hpp>
#include <kcv/profile.hpp>

int main() {
  int failures = 0;
  const auto check = [&failures](bool ok, const char* what) {
    if (!ok) {
      std::fprintf(stderr, "kcv_consumer: wrong: %s\n", what);
      ++failures;
    }
  };
  check(kcv::gate_code(kcv::GateId::kExc01) == "EXC-01", "gate_code(EXC-01)");
  auto gate = kcv::parse_gate("ord-02");
  check(gate && *gate == kcv::GateId::kOrd02, "parse_gate(ord-02)");

  auto contract = kcv::parse_contract(R"({"profile": "fast-math"})", "softmax");
  check(contract.has_value(), "parse_contract");
  if (contract) {
    check(contract->op == "softmax", "contract op");
    check(contract->profile == kcv::ProfileId::kFastMath, "contract profile");
    auto again = kcv::parse_contract(kcv::contract_to_json(*contract));
    check(again && again->profile == kcv::ProfileId::kFastMath, "contract round trip");
  }
  check(!kcv::parse_contract(R"({"no_such_field": 1})", "softmax"), "unknown field rejected");
  std::printf("kcv_consumer: %s\n", failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
