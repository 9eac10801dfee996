// File: glr/check/compare.cpp
// The metric of compare.hpp.
#include "check/compare.hpp"

#include <cmath>
#include <limits>

namespace kcv::glr::check {
namespace {

constexpr double kOutputLimit = 0.005;
constexpr double kGradLimit = 0.008;
constexpr double kGateGradLimit = 0.02;

Metric metric(const std::string& name, const DeviceResults& gpu, const std::vector<double>& want,
              double limit) {
  Metric m{name, std::numeric_limits<double>::quiet_NaN(), limit, false};
  const DeviceTensor* t = gpu.find(name);
  if (t == nullptr) return m;
  m.ratio = relative_rms(t->values(), want);
  m.pass = m.ratio <= limit;  // false for NaN
  return m;
}

}  // namespace

double relative_rms(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::quiet_NaN();
  double num = 0.0;
  double den = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return std::numeric_limits<double>::quiet_NaN();
    const double d = got[i] - want[i];
    num += d * d;
    den += want[i] * want[i];
  }
  if (den == 0.0) return num == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
  return std::sqrt(num / den);
}

std::vector<Metric> compare(const HostInputs& in, const DeviceResults& gpu,
                            const ReferenceResults& ref) {
  const MemberTraits tr = traits(in.member);
  std::vector<Metric> out;
  out.push_back(metric("o", gpu, ref.fwd.o, kOutputLimit));
  out.push_back(metric("ht", gpu, ref.fwd.final_state, kOutputLimit));
  out.push_back(metric("dq", gpu, ref.grads.dq, kGradLimit));
  out.push_back(metric("dk", gpu, ref.grads.dk, kGradLimit));
  out.push_back(metric("dv", gpu, ref.grads.dv, kGradLimit));
  out.push_back(metric("dh0", gpu, ref.grads.dh0, kGradLimit));
  if (tr.gate != GateKind::kNone) out.push_back(metric("dg", gpu, ref.grads.dg, kGateGradLimit));
  if (tr.delta_rule) out.push_back(metric("dbeta", gpu, ref.grads.dbeta, kGateGradLimit));
  return out;
}

}  // namespace kcv::glr::check
