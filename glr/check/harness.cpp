// File: glr/check/harness.cpp
// The run loop of harness.hpp.
#include "check/harness.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>
#include <vector>

#include "check/case_spec.hpp"
#include "check/compare.hpp"
#include "check/determinism_check.hpp"
#include "check/nan_check.hpp"
#include "check/reference_run.hpp"
#include "check/report.hpp"

namespace kcv::glr::check {
namespace {

AccuracyRow accuracy(Member member, const CaseSpec& spec, int threads, const Runner& runner) {
  AccuracyRow row{std::string(name(member)), spec.label, describe(spec), {}, "", 0.0};
  const HostInputs in = make_inputs(member, spec);
  Expected<DeviceResults> got = runner(in);
  if (!got) {
    row.error = got.error().to_string();
    return row;
  }
  const auto t0 = std::chrono::steady_clock::now();
  Expected<ReferenceResults> ref = run_reference(in, threads);
  row.reference_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!ref) {
    row.error = "reference: " + ref.error().to_string();
    return row;
  }
  row.metrics = compare(in, *got, *ref);
  return row;
}

std::vector<CaseSpec> cases_of(CaseList list) {
  switch (list) {
    case CaseList::kTiny:
      return tiny_cases();
    case CaseList::kQuick:
      return quick_cases();
    case CaseList::kFull:
      break;
  }
  return full_cases();
}

}  // namespace

bool parse_options(int argc, char** argv, HarnessOptions& opt,
                   const std::function<bool(const std::string&)>& extra) {
  for (int i = 0; i < argc; ++i) {
    if (i > 0) opt.command += ' ';
    opt.command += argv[i];
  }
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--tiny") {
      opt.cases = CaseList::kTiny;
    } else if (a == "--quick") {
      opt.cases = CaseList::kQuick;
    } else if (a == "--out" && has_value) {
      opt.out = argv[++i];
    } else if (a == "--member" && has_value) {
      opt.member = argv[++i];
    } else if (a == "--threads" && has_value) {
      opt.threads = std::atoi(argv[++i]);
    } else if (a == "--runs" && has_value) {
      opt.runs = std::atoi(argv[++i]);
    } else if (a == "--accuracy-only") {
      opt.nan_check = false;
      opt.determinism = false;
    } else if (!(extra && extra(a))) {
      std::cerr << "unknown or incomplete option '" << a << "'\n"
                << "options: [--tiny|--quick] [--out FILE] [--member la|ssd|gla|deltanet|gdn|kda]"
                   " [--threads N] [--runs N] [--accuracy-only]\n";
      return false;
    }
  }
  if (opt.threads <= 0)
    opt.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (opt.runs < 2) {
    std::cerr << "--runs must be at least 2\n";
    return false;
  }
  return true;
}

int run_harness(const HarnessOptions& opt, const Runner& runner, const std::string& device,
                std::vector<CheckResult> checks) {
  for (const CheckResult& c : checks) print_check(std::cout, c);
  std::cout << "\ndevice: " << device << "\n\n";
  std::vector<Member> members;
  for (Member m : kAllMembers)
    if (opt.member.empty() || opt.member == name(m)) members.push_back(m);
  std::vector<AccuracyRow> rows;
  print_row_header(std::cout);
  for (const CaseSpec& spec : cases_of(opt.cases)) {
    std::cout << "# " << spec.label << ": " << describe(spec) << "\n" << std::flush;
    for (Member m : members) {
      rows.push_back(accuracy(m, spec, opt.threads, runner));
      print_row(std::cout, rows.back());
      std::cout << std::flush;
    }
  }
  std::cout << "\n";
  for (Member m : members) {
    if (opt.nan_check) {
      checks.push_back(nan_propagation(m, runner));
      print_check(std::cout, checks.back());
    }
    if (opt.determinism) {
      checks.push_back(determinism(m, opt.runs, runner));
      print_check(std::cout, checks.back());
    }
    std::cout << std::flush;
  }
  std::size_t failed = 0;
  for (const AccuracyRow& r : rows) failed += r.pass() ? 0 : 1;
  for (const CheckResult& c : checks) failed += c.pass ? 0 : 1;
  std::cout << "\n"
            << (failed == 0 ? "ALL PASS" : std::to_string(failed) + " FAILED") << " ("
            << rows.size() << " accuracy rows, " << checks.size() << " checks)\n";
  if (!opt.out.empty()) {
    std::ofstream f(opt.out);
    write_markdown(f, device, opt.command, rows, checks);
    if (!f) {
      std::cout << "FAIL could not write " << opt.out << "\n";
      return 1;
    }
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace kcv::glr::check
