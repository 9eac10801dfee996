// File: src/report/audit_margins.cpp
// Threshold calibration margins: how far each gate's worst ratio sits from its threshold. A
// gate's worst_ratio is the measured error over the allowed error, so 1 is the threshold, and
// the interesting scale is logarithmic (a kernel at 1e-3 has three decades of margin, one at
// 1e+4 misses by four). Bins are right-closed so a ratio of exactly 1 lands on the passing side,
// as the judges pass ratio <= 1. Zero and tiny ratios go to the underflow bin, huge ones to
// overflow; ratios the store has no value for (not measured, or not finite) are counted apart.
#include <algorithm>
#include <cmath>
#include <map>

#include "report/audit_report_internal.hpp"

namespace kcv::audit_report {

int margin_bin(const MarginAxis& axis, double ratio) {
  const int n = axis.bins();
  if (!(ratio > 0) || std::log10(ratio) <= axis.lo) return 0;
  const double x = std::log10(ratio);
  if (x > axis.hi) return n + 1;
  const int i = static_cast<int>(std::ceil((x - axis.lo) / axis.width - 1e-12));
  return std::clamp(i, 1, n);
}

void MarginBuilder::add(const audit::VerdictRecord& v) {
  if (v.verdict != "pass" && v.verdict != "fail") return;
  auto [it, fresh] = rows_.try_emplace(v.gate);
  Acc& acc = it->second;
  if (fresh) {
    acc.row.gate = v.gate;
    acc.row.pass.assign(axis_.bins() + 2, 0);
    acc.row.fail.assign(axis_.bins() + 2, 0);
  }
  if (!v.worst_ratio || !std::isfinite(*v.worst_ratio)) {
    ++acc.row.unmeasured;
    return;
  }
  const double ratio = *v.worst_ratio;
  ++acc.row.measured;
  if (ratio > 1.0) ++acc.row.above_threshold;
  ++(v.verdict == "fail" ? acc.row.fail : acc.row.pass)[margin_bin(axis_, ratio)];
  acc.ratios.push_back(ratio);
}

std::vector<MarginRow> MarginBuilder::rows() && {
  std::vector<MarginRow> out;
  for (auto& [gate, acc] : rows_) {
    if (!acc.ratios.empty()) {
      std::sort(acc.ratios.begin(), acc.ratios.end());
      const size_t n = acc.ratios.size();
      acc.row.median = n % 2 ? acc.ratios[n / 2] : (acc.ratios[n / 2 - 1] + acc.ratios[n / 2]) / 2;
      acc.row.max = acc.ratios.back();
    }
    out.push_back(std::move(acc.row));
  }
  return out;
}

}  // namespace kcv::audit_report
