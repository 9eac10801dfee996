// File: bench/glr/oracle_time.cpp
// The host time of the fp64 oracle in a GLR verification: for each member, the CMP-01 probes of
// a case list under the bf16 grade (the grade whose bound also needs the declared-rounding σ)
// through GlrOracle, as `kcv verify` runs them (make_inputs, then evaluate), on N threads and, as
// the anchor measured in the same run, on one. It is the work a GPU waits on while `kcv verify`
// checks a GLR candidate (glr/check/device_run.sh's mma and pipeline steps); its longest probe
// (one sequence of T = 32768 and two value heads in the full list) sets a floor under the step.
//
//   cmake --build --preset release --target kcv_bench_glr_oracle
//   build/release/glr/verify/kcv_bench_glr_oracle [--members kda,gdn,...] [--cases full|small]
//                                                 [--threads N] [--no-anchor]
//
// Prints per member: the probes, the summed seconds on N threads and on one, their ratio, and the
// longest probe on each.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kcv/glr/verify.hpp"

namespace {

using kcv::glr::Member;

struct Timing {
  double total_s = 0.0;
  double longest_s = 0.0;
  std::string longest;
  int probes = 0;
  bool ok = true;
};

Timing time_oracle(Member m, kcv::glr::CaseList cases, int threads) {
  kcv::glr::GlrOptions opt;
  opt.cases = cases;
  opt.grades = {kcv::glr::Grade::kBf16};
  opt.threads = threads;
  kcv::glr::GlrProbes source(m, kcv::glr::Grade::kBf16, opt);
  kcv::glr::GlrOracle oracle(opt);
  kcv::Contract contract;
  contract.op = kcv::glr::op_name(m, kcv::glr::OpKind::kChunk);
  Timing t;
  for (const kcv::Probe& probe : source.plan(kcv::GateId::kCmp01, contract, 7037814)) {
    const auto t0 = std::chrono::steady_clock::now();
    auto inputs = oracle.make_inputs(probe);
    bool ok = inputs.has_value();
    if (ok) ok = oracle.evaluate(probe, *inputs, contract).has_value();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    t.ok = t.ok && ok;
    t.total_s += s;
    ++t.probes;
    if (s > t.longest_s) {
      t.longest_s = s;
      t.longest = probe.label;
    }
  }
  return t;
}

std::vector<std::string> split(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    const std::size_t comma = s.find(',');
    out.emplace_back(s.substr(0, comma));
    s = comma == std::string_view::npos ? std::string_view{} : s.substr(comma + 1);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> members = {"la", "ssd", "gla", "deltanet", "gdn", "kda"};
  kcv::glr::CaseList cases = kcv::glr::CaseList::kFull;
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  bool anchor = true;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--members" && i + 1 < argc) {
      members = split(argv[++i]);
    } else if (a == "--cases" && i + 1 < argc) {
      const std::string_view c = argv[++i];
      cases = c == "small" ? kcv::glr::CaseList::kSmall : kcv::glr::CaseList::kFull;
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--no-anchor") {
      anchor = false;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--members kda,gdn,...] [--cases full|small] [--threads N] "
                   "[--no-anchor]\n",
                   argv[0]);
      return 2;
    }
  }
  std::printf("GlrOracle, CMP-01 probes of the %s case list, bf16 grade (values, dg's terms, σ)\n",
              cases == kcv::glr::CaseList::kFull ? "full" : "small");
  std::printf("| member | probes | s on %d threads | longest | s on 1 thread | longest | ratio |\n",
              threads);
  std::printf("|---|---|---|---|---|---|---|\n");
  int status = 0;
  for (const std::string& name : members) {
    Member m{};
    bool found = false;
    for (Member x : kcv::glr::kAllMembers)
      if (kcv::glr::name(x) == name) {
        m = x;
        found = true;
      }
    if (!found) {
      std::fprintf(stderr, "unknown member '%s'\n", name.c_str());
      return 2;
    }
    const Timing par = time_oracle(m, cases, threads);
    const Timing one = anchor ? time_oracle(m, cases, 1) : Timing{};
    if (!par.ok || !one.ok) status = 1;
    if (anchor) {
      std::printf("| %s | %d | %.2f | %.2f (%s) | %.2f | %.2f | %.2fx |\n", name.c_str(),
                  par.probes, par.total_s, par.longest_s, par.longest.c_str(), one.total_s,
                  one.longest_s, par.total_s > 0 ? one.total_s / par.total_s : 0.0);
    } else {
      std::printf("| %s | %d | %.2f | %.2f (%s) | - | - | - |\n", name.c_str(), par.probes,
                  par.total_s, par.longest_s, par.longest.c_str());
    }
    std::fflush(stdout);
  }
  if (status != 0) std::fprintf(stderr, "an oracle call failed\n");
  return status;
}
