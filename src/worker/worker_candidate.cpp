// File: src/worker/worker_candidate.cpp
// make_worker_candidate (kcv/worker.hpp): a name and an op for the executor's load check.
#include "kcv/contract.hpp"
#include "kcv/worker.hpp"

namespace kcv {
namespace {

class WorkerCandidate final : public Candidate {
 public:
  WorkerCandidate(std::string name, std::string op) : name_(std::move(name)), op_(std::move(op)) {
    contract_.op = op_;
  }
  WorkerCandidate(std::string name, std::string op, Contract contract,
                  std::optional<std::string> device_code)
      : name_(std::move(name)),
        op_(std::move(op)),
        contract_(std::move(contract)),
        device_code_(std::move(device_code)) {}
  const std::string& name() const override { return name_; }
  const std::string& op() const override { return op_; }
  const Contract& contract() const override { return contract_; }
  std::optional<std::string> device_code() const override { return device_code_; }
  int call(const std::vector<kcv_tensor>&, std::vector<kcv_tensor>&,
           const std::map<std::string, double>&, const LaunchConfig&,
           std::string* message) override {
    if (message != nullptr) *message = "this candidate runs only in its worker process";
    return -1;
  }

 private:
  std::string name_, op_;
  Contract contract_;
  std::optional<std::string> device_code_;
};

}  // namespace

std::unique_ptr<Candidate> make_worker_candidate(std::string name, std::string op) {
  return std::make_unique<WorkerCandidate>(std::move(name), std::move(op));
}

Expected<std::unique_ptr<Candidate>> make_worker_candidate(const WorkerKernelInfo& info) {
  Contract contract;
  contract.op = info.op;
  if (!info.contract_json.empty() && info.contract_json != "null") {
    auto parsed = parse_contract(info.contract_json, info.op);
    if (!parsed) return parsed.error();
    contract = std::move(*parsed);
  }
  return std::unique_ptr<Candidate>(
      std::make_unique<WorkerCandidate>(info.name, info.op, std::move(contract), info.device_code));
}

}  // namespace kcv
