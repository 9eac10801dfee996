// File: src/exec/candidate.cpp
// make_candidate: a kcv_kernel descriptor becomes a Candidate. The contract JSON is parsed here,
// once (a kernel without one gets the defaults for its op), and device_code is resolved against
// the directory the descriptor came from, so a library can name files that ship beside it.
// call() turns the C++ call into the C ABI's kcv_call: params as parallel name/value arrays,
// the launch hints, and an error buffer the kernel may fill.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <filesystem>

#include "exec/descriptor_candidate.hpp"
#include "kcv/op.hpp"

namespace kcv {
namespace exec {
namespace {

constexpr int32_t kErrorCapacity = 1024;

class DescriptorCandidate final : public Candidate {
 public:
  DescriptorCandidate(const kcv_kernel& k, Contract contract,
                      std::optional<std::string> device_code, std::shared_ptr<void> keep_alive)
      : name_(k.name),
        op_(k.op),
        run_(k.run),
        contract_(std::move(contract)),
        device_code_(std::move(device_code)),
        keep_alive_(std::move(keep_alive)) {}

  const std::string& name() const override { return name_; }
  const std::string& op() const override { return op_; }
  const Contract& contract() const override { return contract_; }
  std::optional<std::string> device_code() const override { return device_code_; }

  int call(const std::vector<kcv_tensor>& inputs, std::vector<kcv_tensor>& outputs,
           const std::map<std::string, double>& params, const LaunchConfig& launch,
           std::string* message) override {
    std::vector<const char*> names;
    std::vector<double> values;
    for (const auto& [key, value] : params) {
      names.push_back(key.c_str());
      values.push_back(value);
    }
    std::array<char, kErrorCapacity> error{};
    const kcv_call call{
        KCV_KERNEL_ABI_VERSION, launch.block,  launch.threads, static_cast<int32_t>(names.size()),
        names.data(),           values.data(), error.data(),   kErrorCapacity};
    const int rc = run_(inputs.data(), static_cast<int32_t>(inputs.size()), outputs.data(),
                        static_cast<int32_t>(outputs.size()), &call);
    error.back() = '\0';
    if (message != nullptr) *message = error.data();
    return rc;
  }

 private:
  std::string name_;
  std::string op_;
  kcv_run_fn run_;
  Contract contract_;
  std::optional<std::string> device_code_;
  std::shared_ptr<void> keep_alive_;
};

Status check_descriptor(const kcv_kernel& k) {
  if (k.name == nullptr || *k.name == '\0') {
    return make_error(ErrorCode::kCandidate, "a kcv_kernel descriptor has no name");
  }
  if (k.op == nullptr || *k.op == '\0') {
    return make_error(ErrorCode::kCandidate, fmt::format("kernel '{}' names no op", k.name));
  }
  if (k.run == nullptr) {
    return make_error(ErrorCode::kCandidate,
                      fmt::format("kernel '{}' has no run function", k.name));
  }
  if (find_op(k.op) == nullptr) {
    std::vector<std::string> known;
    for (const Op* op : all_ops()) known.push_back(op->signature().name);
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("kernel '{}' implements unknown op '{}'; known ops: {}", k.name,
                                  k.op, fmt::join(known, ", ")));
  }
  return {};
}

std::optional<std::string> resolve_device_code(const char* device_code,
                                               const std::string& base_dir) {
  if (device_code == nullptr || *device_code == '\0') return std::nullopt;
  const std::filesystem::path p(device_code);
  if (p.is_absolute() || base_dir.empty()) return p.string();
  return (std::filesystem::path(base_dir) / p).lexically_normal().string();
}

}  // namespace

Expected<std::unique_ptr<Candidate>> make_descriptor_candidate(const kcv_kernel& k,
                                                               const std::string& base_dir,
                                                               std::shared_ptr<void> keep_alive) {
  if (Status s = check_descriptor(k); !s) return s.error();
  const std::string_view json = k.contract_json != nullptr ? k.contract_json : "{}";
  auto contract = parse_contract(json, k.op);
  if (!contract) {
    return make_error(contract.error().code,
                      fmt::format("kernel '{}': {}", k.name, contract.error().message),
                      contract.error().context);
  }
  std::unique_ptr<Candidate> c = std::make_unique<DescriptorCandidate>(
      k, std::move(*contract), resolve_device_code(k.device_code, base_dir), std::move(keep_alive));
  return c;
}

}  // namespace exec

Expected<std::unique_ptr<Candidate>> make_candidate(const kcv_kernel& k, std::string base_dir) {
  return exec::make_descriptor_candidate(k, base_dir, nullptr);
}

}  // namespace kcv
