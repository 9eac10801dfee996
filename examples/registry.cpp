// File: examples/registry.cpp
// The table of bundled kernels, exported through the C ABI (kcv_kernels) for the shared library
// and through bundled.hpp for static linking. The table is built once, on first use, from the
// lists each kernel file appends to (positive control first, then the red team by gate family).
#include <array>
#include <utility>

#include "bundled.hpp"
#include "kernels.hpp"

namespace {

const kcv::examples::KernelList& table() {
  static const kcv::examples::KernelList kernels = [] {
    kcv::examples::KernelList k;
    kcv::examples::add_control_elementwise(k);
    kcv::examples::add_control_reductions(k);
    kcv::examples::add_control_rowwise(k);
    kcv::examples::add_control_matmul(k);
    kcv::examples::add_redteam_cmp(k);
    kcv::examples::add_redteam_ord(k);
    kcv::examples::add_redteam_exc(k);
    kcv::examples::add_redteam_prc(k);
    kcv::examples::add_redteam_res(k);
    return k;
  }();
  return kernels;
}

// Name segment after "redteam." -> gate code and id.
constexpr std::array<std::pair<std::string_view, kcv::GateId>, 12> kGateSegments = {{
    {"cmp01", kcv::GateId::kCmp01}, {"cmp02", kcv::GateId::kCmp02}, {"cmp03", kcv::GateId::kCmp03},
    {"ord01", kcv::GateId::kOrd01}, {"ord02", kcv::GateId::kOrd02}, {"ord03", kcv::GateId::kOrd03},
    {"exc01", kcv::GateId::kExc01}, {"exc02", kcv::GateId::kExc02}, {"prc01", kcv::GateId::kPrc01},
    {"prc02", kcv::GateId::kPrc02}, {"res01", kcv::GateId::kRes01}, {"res02", kcv::GateId::kRes02},
}};
constexpr std::array<std::string_view, 12> kGateCodes = {
    "CMP-01", "CMP-02", "CMP-03", "ORD-01", "ORD-02", "ORD-03",
    "EXC-01", "EXC-02", "PRC-01", "PRC-02", "RES-01", "RES-02"};

constexpr std::string_view kRedteamPrefix = "redteam.";

std::optional<std::size_t> gate_index(std::string_view name) {
  if (!name.starts_with(kRedteamPrefix)) return std::nullopt;
  name.remove_prefix(kRedteamPrefix.size());
  const std::string_view segment = name.substr(0, name.find('.'));
  for (std::size_t i = 0; i < kGateSegments.size(); ++i) {
    if (kGateSegments[i].first == segment) return i;
  }
  return std::nullopt;
}

}  // namespace

const kcv_kernel* kcv_bundled_kernels(int32_t* count) {
  *count = static_cast<int32_t>(table().size());
  return table().data();
}

std::span<const kcv_kernel> kcv_bundled_kernels() { return table(); }

std::string_view kcv_bundled_base_dir() {
#ifdef KCV_EXAMPLES_DEVICE_DIR
  return KCV_EXAMPLES_DEVICE_DIR;
#else
  return {};
#endif
}

std::string_view intended_gate(const kcv_kernel& k) {
  const auto i = gate_index(k.name != nullptr ? k.name : "");
  return i ? kGateCodes[*i] : std::string_view{};
}

std::optional<kcv::GateId> intended_gate(std::string_view kernel_name) {
  const auto i = gate_index(kernel_name);
  if (!i) return std::nullopt;
  return kGateSegments[*i].second;
}

bool is_control_kernel(const kcv_kernel& k) {
  return k.name != nullptr && std::string_view(k.name).starts_with("control.");
}

bool is_redteam_kernel(const kcv_kernel& k) {
  return k.name != nullptr && std::string_view(k.name).starts_with(kRedteamPrefix);
}

extern "C" KCV_EXPORT const kcv_kernel* kcv_kernels(int32_t* count) { return kcv_bundled_kernels(count); }
