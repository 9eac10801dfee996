// File: src/cli/cmd_verify.cpp
// `kcv verify`: load kernels from a user's shared library, run the gates, print the table,
// write JSON/JUnit reports, exit 0 (all passed) or 1. --kernel takes a name or a glob
// ("control.*"), so one command can verify a whole library; every matched kernel is verified
// and reported, and the exit code covers them all. --executor worker runs each kernel in its
// own kcv-worker process (docs/06_worker_protocol.md), started before its gates run. A kernel
// of a GLR op (glr.gdn, ...) runs the GLR plans of kcv/glr/verify.hpp through the same
// pipeline, once per --grade; its reports print and serialise like any other. --json and
// --junit are rewritten after every report, so a run stopped at a deadline keeps what finished.
// With --executor worker the library is loaded only by kcv-worker, in a bubblewrap sandbox
// (kcv/sandbox.hpp) when the host has one: kcv's own process never loads it, so a constructor
// that exits or signals ends the worker, never kcv. --call-timeout bounds each call, --deadline
// the whole run; probing stops after two timed-out calls, and shrinking at the first.
#include <fmt/format.h>
#include <fnmatch.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "cli/cli_error.hpp"
#include "cli/common.hpp"
#include "cli/tools.hpp"
#include "kcv/glr/verify.hpp"
#include "kcv/report.hpp"
#include "kcv/sandbox.hpp"
#include "kcv/verify.hpp"
#include "kcv/worker.hpp"

namespace kcv::cli {
namespace {

bool is_glob(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

/// The kernel names to verify: the --kernel name itself, or every kernel matching its glob.
std::vector<std::string> pick_kernels(const CliOptions& o, const std::string& path) {
  if (!is_glob(o.kernel)) return {o.kernel};
  std::vector<std::string> names;
  for (const auto& [name, op] : unwrap(list_library_kernels(path))) {
    if (fnmatch(o.kernel.c_str(), name.c_str(), 0) != 0) continue;
    if (!o.op.empty() && op != o.op) continue;
    names.push_back(name);
  }
  if (names.empty()) usage_error(fmt::format("--kernel: no kernel in '{}' matches '{}'", o.candidate, o.kernel));
  return names;
}

ExitStatus list_kernels(const std::string& path) {
  for (const auto& [name, op] : unwrap(list_library_kernels(path))) {
    fmt::print("{:<40} {}\n", name, op);
  }
  return ExitStatus::kSuccess;
}

VerifyOptions verify_options(const CliOptions& o) {
  VerifyOptions v;
  v.seed = o.seed;
  v.gates = parse_gate_list(o.gates);
  v.profile = parse_profile_flag(o.profile);
  v.shrink = !o.no_shrink;
  v.include_large = !o.no_large;
  if (!o.resources_path.empty()) v.resources = unwrap(load_resource_report(o.resources_path));
  if (o.call_timeout_s <= 0) usage_error("--call-timeout: must be positive");
  if (o.deadline_s < 0) usage_error("--deadline: must not be negative");
  v.call_timeout_ms = static_cast<int>(o.call_timeout_s * 1000);
  if (o.deadline_s > 0) {
    v.deadline = std::chrono::steady_clock::now() +
                 std::chrono::milliseconds(static_cast<int64_t>(o.deadline_s * 1000));
  }
  if (is_terminal(STDERR_FILENO)) {
    v.progress = [](std::string_view line) { fmt::print(stderr, "\r\033[K{}", line); };
  }
  return v;
}

/// kcv-worker in a sandbox of its own: the library's directory and the worker read-only, call
/// files in a private directory under /dev/shm; the worker as it is where no sandbox runs.
struct SandboxedWorker {
  std::vector<std::string> command;
  std::string shm_dir = "/dev/shm";
  ~SandboxedWorker() {
    if (shm_dir != "/dev/shm") std::filesystem::remove_all(shm_dir);
  }
};

std::unique_ptr<SandboxedWorker> sandboxed_worker(const std::string& path) {
  auto w = std::make_unique<SandboxedWorker>();
  w->command = default_worker_command();
  if (!sandbox_support().available) {
    fmt::print(stderr, "kcv verify: WARNING: the kernel runs UNSANDBOXED ({})\n",
               sandbox_support().reason);
    return w;
  }
  char dir[] = "/dev/shm/kcv-verify-XXXXXX";
  if (mkdtemp(dir) == nullptr)
    throw CliFailure(ExitStatus::kInternal, "cannot create a call-file directory in /dev/shm");
  w->shm_dir = dir;
  SandboxSpec spec;
  std::error_code ec;
  const auto worker = std::filesystem::canonical(w->command.front(), ec);
  spec.read_only = {std::filesystem::absolute(path).parent_path().string()};
  if (!ec) spec.read_only.push_back(worker.parent_path().string());
  if (const char* ld = std::getenv("LD_LIBRARY_PATH"); ld != nullptr) {
    std::string dirs = ld;
    for (std::size_t b = 0, e; b < dirs.size(); b = e + 1) {
      e = std::min(dirs.find(':', b), dirs.size());
      if (e > b) spec.read_only.push_back(dirs.substr(b, e - b));
    }
  }
  spec.writable = {{w->shm_dir, w->shm_dir}};
  spec.devices = gpu_device_nodes();
  spec.env = sandbox_environment();
  w->command = sandbox_argv(spec, {ec ? w->command.front() : worker.string()});
  return w;
}

/// A worker executor serving one kernel of the library; fails when the worker cannot load it.
std::unique_ptr<WorkerExecutor> worker_for(const std::string& path, const std::string& kernel,
                                           const std::string& op, const SandboxedWorker& box) {
  WorkerOptions w;
  w.command = box.command;
  w.shm_dir = box.shm_dir;
  w.load.path = std::filesystem::absolute(path).string();
  w.load.kernel = kernel;
  w.load.op = op;
  return make_worker_executor(std::move(w));
}

std::vector<VerifyReport> verify_one(const CliOptions& o, const std::string& path,
                                     const std::string& kernel, VerifyOptions options,
                                     Executor* shared_executor) {
  std::unique_ptr<Candidate> candidate;
  std::unique_ptr<SandboxedWorker> box;
  std::unique_ptr<Executor> own;
  if (shared_executor != nullptr) {
    candidate = unwrap(load_shared_library_candidate(path, kernel, o.op));
  } else {  // only the worker loads the library: the candidate is what its load reply says
    box = sandboxed_worker(path);
    std::unique_ptr<WorkerExecutor> worker = worker_for(path, kernel, o.op, *box);
    candidate = unwrap(make_worker_candidate(unwrap(worker->start())));
    own = std::move(worker);
  }
  options.replay_candidate = path + ":" + candidate->name();
  Executor& executor = shared_executor ? *shared_executor : *own;
  std::vector<VerifyReport> reports;
  if (glr::member_of_op(candidate->op())) {
    reports = unwrap(glr::verify(*candidate, executor, options, glr_options(o)));
  } else {
    reports.push_back(unwrap(verify(*candidate, executor, options)));
  }
  if (options.progress) fmt::print(stderr, "\r\033[K");
  return reports;
}

void write_reports(const CliOptions& o, const std::vector<VerifyReport>& reports) {
  if (!o.json_path.empty()) write_text_file(o.json_path, render_json(reports), "--json");
  if (!o.junit_path.empty()) write_text_file(o.junit_path, render_junit(reports), "--junit");
}

}  // namespace

void configure_verify(CLI::App& cmd, CliOptions& o) {
  cmd.add_option("--candidate", o.candidate, "shared library exporting kcv_kernels (kcv_kernel.h)")->required();
  cmd.add_option("--kernel", o.kernel, "kernel name or glob (e.g. 'control.*'); default: by --op, or the only kernel");
  cmd.add_option("--op", o.op, "pick the kernel implementing this op (see `kcv ops`)");
  cmd.add_option("--profile", o.profile, "override the contract's semantic profile (strict, cuda-default, fast-math, triton-default, pytorch-eager)");
  cmd.add_option("--gates", o.gates, "comma-separated gates to run (default: all twelve)");
  cmd.add_option("--seed", o.seed, "seed of every generated input (decimal or 0x hex)")->capture_default_str();
  cmd.add_flag("--no-shrink", o.no_shrink, "report the first failing probe without shrinking it");
  cmd.add_flag("--no-large", o.no_large, "skip the large (>= 2^20 elements) shapes");
  cmd.add_option("--executor", o.executor, "forked (each call in a child process), in-process, or worker (a kcv-worker process, restarted after a crash)")->capture_default_str();
  cmd.add_option("--json", o.json_path, "write the JSON report (docs/report_schema.md) to FILE");
  cmd.add_option("--junit", o.junit_path, "write a JUnit XML report to FILE");
  cmd.add_option("--resources", o.resources_path, "ptxas -v log, cuobjdump output or PTX for RES-02");
  cmd.add_flag("--list", o.list, "list the library's kernels and exit");
  cmd.add_flag("--color", o.color, "colour the verdicts (ANSI)");
  cmd.add_option("--grade", o.grades,
                 "GLR ops: precision grades to judge under, comma-separated (fp32, bf16)")
      ->capture_default_str();
  cmd.add_option("--glr-cases", o.glr_cases,
                 "GLR ops: CMP-01 case list, small (CPU emulation) or full (T up to 32768)")
      ->capture_default_str();
  cmd.add_option("--max-tokens", o.max_tokens,
                 "GLR ops: probe budget; probes with more tokens are refused (0: none)")
      ->capture_default_str();
  cmd.add_option("--runs", o.runs, "GLR ops: ORD-02 repetitions of forward + backward")
      ->capture_default_str();
  cmd.add_option("--call-timeout", o.call_timeout_s,
                 "seconds one call may take before it is a timeout (not GLR ops: --timeout)")
      ->capture_default_str();
  cmd.add_option("--deadline", o.deadline_s,
                 "seconds the whole verification may take; probing stops there (0: none)")
      ->capture_default_str();
  add_glr_run_options(cmd, o);
}

ExitStatus run_verify(const CliOptions& o) {
  const std::string path = loadable_path(o.candidate);
  if (o.list) return list_kernels(path);
  check_op(o.op);
  const VerifyOptions options = verify_options(o);
  // One worker per kernel (a worker loads one kernel); the other executors serve them all.
  std::unique_ptr<Executor> executor = o.executor == "worker" ? nullptr : make_executor(o.executor);
  std::vector<VerifyReport> reports;
  for (const std::string& kernel : pick_kernels(o, path)) {
    for (VerifyReport& r : verify_one(o, path, kernel, options, executor.get())) {
      if (!reports.empty()) fmt::print("\n");
      fmt::print("{}", render_table(r, o.color));
      std::fflush(stdout);
      reports.push_back(std::move(r));
      write_reports(o, reports);
    }
  }
  if (reports.empty()) throw CliFailure(ExitStatus::kInternal, "no kernel was verified");
  write_reports(o, reports);
  for (const VerifyReport& r : reports) {
    if (!r.passed()) return ExitStatus::kGateFailed;
  }
  return ExitStatus::kSuccess;
}

}  // namespace kcv::cli
