// File: src/report/fig_calibration.cpp
// Figure 2, threshold calibration margins: for each gate, a histogram of log10(worst_ratio)
// over the kernels it judged (pass in blue, fail in red, stacked), with the threshold (ratio 1)
// as a dashed line. A well-calibrated gate shows passes piled well left of the line and fails
// right of it; mass hugging the line means the verdict hangs on the tolerance. Bar heights are
// scaled per gate (each row to its own largest bin), since gates judge different numbers of
// kernels; the counts are in each bin's data attributes and the row's summary.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "report/audit_report_internal.hpp"
#include "report/svg.hpp"

namespace kcv::audit_report {
namespace {

constexpr double kLeft = 80, kPlot = 600, kRow = 46, kTop = 40;

// The left edge of column i (1 <= i <= bins + 1) is 10^(lo + (i - 1) * width).
std::string edge_label(const MarginAxis& axis, int column) {
  return fmt::format("1e{:g}", axis.lo + (column - 1) * axis.width);
}

void draw_row(svg::Canvas& c, const MarginAxis& axis, const MarginRow& m, double y) {
  const int cols = axis.bins() + 2;
  const double colw = kPlot / cols;
  int64_t top = 1;
  for (int i = 0; i < cols; ++i) top = std::max(top, m.pass[i] + m.fail[i]);
  const double h = kRow - 10;
  c.text(kLeft - 8, y + h * 0.6, m.gate, "end", 12);
  c.line(kLeft, y + h, kLeft + kPlot, y + h, {"none", "#999999", 0.5});
  for (int i = 0; i < cols; ++i) {
    if (m.pass[i] + m.fail[i] == 0) continue;
    const double hp = h * m.pass[i] / top, hf = h * m.fail[i] / top;
    const std::string data =
        svg::attr("class", "bin") + svg::attr("data-gate", m.gate) +
        fmt::format(" data-bin=\"{}\" data-pass=\"{}\" data-fail=\"{}\"", i, m.pass[i], m.fail[i]);
    const double x = kLeft + i * colw + 1;
    if (m.pass[i]) c.rect(x, y + h - hp, colw - 2, hp, {"#4477aa"}, data);
    if (m.fail[i]) c.rect(x, y + h - hp - hf, colw - 2, hf, {"#cc3311"}, data);
  }
  c.text(kLeft + kPlot + 8, y + h * 0.45, fmt::format("n={} >1: {}", m.measured, m.above_threshold),
         "start", 10);
  const std::string unmeasured =
      m.unmeasured ? fmt::format(" ({} unmeasured)", m.unmeasured) : std::string();
  c.text(kLeft + kPlot + 8, y + h * 0.45 + 12,
         m.measured ? fmt::format("median {} max {}{}", ratio_text(m.median), ratio_text(m.max),
                                  unmeasured)
                    : "no worst ratio" + unmeasured,
         "start", 10);
}

}  // namespace

std::string svg_calibration(const AuditReport& r) {
  const MarginAxis& axis = r.axis;
  const int cols = axis.bins() + 2;
  const double colw = kPlot / cols;
  const double bottom = kTop + std::max<size_t>(r.margins.size(), 1) * kRow;
  svg::Canvas c(kLeft + kPlot + 230, bottom + 50,
                fmt::format("Threshold calibration margins (log10 worst ratio), profile {}",
                            r.options.profile));
  c.text(10, 20,
         fmt::format("Calibration margins: worst ratio per gate, log scale, 1 = threshold "
                     "(profile {}; blue pass, red fail)",
                     r.options.profile),
         "start", 14);
  for (size_t g = 0; g < r.margins.size(); ++g) draw_row(c, axis, r.margins[g], kTop + g * kRow);
  if (r.margins.empty()) c.text(kLeft, kTop + 20, "no measured worst ratio under this profile");
  // The threshold: the boundary after the bin whose upper edge is log10(ratio) = 0.
  const double threshold_x = kLeft + colw * (1 + (0 - axis.lo) / axis.width);
  c.line(threshold_x, kTop - 6, threshold_x, bottom, {"none", "#222222", 1.5, "5,3"},
         svg::attr("class", "threshold"));
  c.text(threshold_x, kTop - 10, "ratio 1 (threshold)", "middle", 10);
  const int per_decade = std::max(1, static_cast<int>(std::lround(1.0 / axis.width)));
  for (int i = 1; i <= cols - 1; i += per_decade) {
    const double x = kLeft + i * colw;
    c.line(x, bottom, x, bottom + 4, {"none", "#999999", 0.5});
    c.text(x, bottom + 16, edge_label(axis, i), "middle", 9);
  }
  c.text(kLeft + colw / 2, bottom + 28, "less", "middle", 9);
  c.text(kLeft + kPlot - colw / 2, bottom + 28, "more", "middle", 9);
  c.text(kLeft + kPlot / 2, bottom + 42, "worst ratio (log scale); 1 = the gate's threshold",
         "middle", 11);
  return c.finish();
}

}  // namespace kcv::audit_report
