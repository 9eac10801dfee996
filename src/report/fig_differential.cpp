// File: src/report/fig_differential.cpp
// Figure 3, the 2x2 differential: kcv against the allclose replica (first row of grids) and
// against each corpus's original verdict (second row), overall and per corpus. Columns are the
// other judge (accepts | rejects), rows are kcv (accepts | rejects). The off-diagonal cells are
// the findings: kcv rejects what the other accepted (the rigor gap, orange) and kcv accepts
// what the other rejected (the reverse cases, purple, each listed in the report). Shade
// intensity is the cell's share of the grid's included kernels; the count is written in it.
#include <fmt/format.h>

#include <algorithm>

#include "report/audit_report_internal.hpp"
#include "report/svg.hpp"

namespace kcv::audit_report {
namespace {

constexpr double kCell = 64, kGridW = 250, kGridH = 220, kTop = 40, kLabel = 110;

struct Cell {
  const char* key;
  int row, col;  // row 0: kcv accepts; col 0: other accepts
  const char* color;
};

constexpr Cell kCells[] = {
    {"both_accept", 0, 0, "#bbbbbb"},
    {"kcv_accepts_other_rejects", 0, 1, "#aa3377"},
    {"kcv_rejects_other_accepts", 1, 0, "#ee7733"},
    {"both_reject", 1, 1, "#bbbbbb"},
};

int64_t count_of(const audit::Differential& d, std::string_view key) {
  if (key == "both_accept") return d.both_accept;
  if (key == "kcv_accepts_other_rejects") return d.kcv_accepts_other_rejects;
  if (key == "kcv_rejects_other_accepts") return d.kcv_rejects_other_accepts;
  return d.both_reject;
}

void draw_grid(svg::Canvas& c, const audit::Differential& d, double x0, double y0) {
  const int64_t total =
      d.both_accept + d.kcv_accepts_other_rejects + d.kcv_rejects_other_accepts + d.both_reject;
  const std::string corpus = d.corpus.empty() ? "all corpora" : d.corpus;
  c.text(x0 + kLabel / 2 + kCell, y0 + 14, corpus, "middle", 12, " font-weight=\"bold\"");
  const std::string other = d.against == "replica" ? "replica" : "original";
  const double gx = x0 + kLabel - 40, gy = y0 + 44;
  c.text(gx + kCell, gy - 18, other, "middle", 10);
  c.text(gx + kCell / 2, gy - 5, "accepts", "middle", 10);
  c.text(gx + kCell * 1.5, gy - 5, "rejects", "middle", 10);
  c.text(gx - 5, gy + kCell / 2 + 4, "kcv accepts", "end", 10);
  c.text(gx - 5, gy + kCell * 1.5 + 4, "kcv rejects", "end", 10);
  for (const Cell& cell : kCells) {
    const int64_t n = count_of(d, cell.key);
    const double share = total == 0 ? 0 : static_cast<double>(n) / total;
    const double x = gx + cell.col * kCell, y = gy + cell.row * kCell;
    c.rect(x, y, kCell, kCell, {"#ffffff", "#666666", 1});
    c.rect(x + 1, y + 1, kCell - 2, kCell - 2, {cell.color},
           svg::attr("class", "cell") + svg::attr("data-judge", d.against) +
               svg::attr("data-corpus", d.corpus) + svg::attr("data-cell", cell.key) +
               fmt::format(" data-count=\"{}\" fill-opacity=\"{:.2f}\"", n, 0.15 + 0.85 * share));
    c.text(x + kCell / 2, y + kCell / 2 + 5, fmt::format("{}", n), "middle", 14);
  }
  c.text(gx + kCell, gy + 2 * kCell + 18, fmt::format("excluded: {}", d.excluded), "middle", 10);
}

}  // namespace

std::string svg_differential(const AuditReport& r) {
  const size_t cols = std::max({r.vs_replica.size(), r.vs_original.size(), size_t{1}});
  svg::Canvas c(20 + cols * kGridW, kTop + 2 * kGridH,
                fmt::format("2x2 differential of kcv against the replica and the original "
                            "verdict, profile {}",
                            r.options.profile));
  c.text(10, 20,
         fmt::format("2x2 differential (profile {}): top vs the allclose replica, bottom vs the "
                     "original verdict",
                     r.options.profile),
         "start", 14);
  for (size_t i = 0; i < r.vs_replica.size(); ++i)
    draw_grid(c, r.vs_replica[i], 10 + i * kGridW, kTop);
  for (size_t i = 0; i < r.vs_original.size(); ++i)
    draw_grid(c, r.vs_original[i], 10 + i * kGridW, kTop + kGridH);
  return c.finish();
}

}  // namespace kcv::audit_report
