// File: src/report/fig_rigor_gap.cpp
// Figure 1, the rigor gap as bars: first the gap itself (the share of kernels the other judge
// accepts that kcv rejects, against the replica and against the original verdict), then the
// headline rates (any violation and tolerance-free floor over judged kernels, and the floor
// over replica-accepted ones: the any-violation rate there is the replica gap bar already),
// then each gate's failure rate among the kernels where that gate applies. Every bar is
// labelled with hits/total: a bar's length alone hides how many kernels stand behind it. A floor
// the store cannot give is a row reading "unavailable" with no bar. Tolerance-free gates are
// marked "(TF)".
#include <fmt/format.h>

#include <algorithm>

#include "report/audit_report_internal.hpp"
#include "report/svg.hpp"

namespace kcv::audit_report {
namespace {

struct Bar {
  std::string group;
  std::string label;
  std::string key;  // data-key, stable for tests: "gap:replica", "any", "tf", "gate:CMP-01"
  std::optional<audit::Rate> rate;  // nullopt: unavailable, no bar drawn
};

std::vector<Bar> bars_of(const AuditReport& r) {
  std::vector<Bar> bars;
  if (!r.vs_replica.empty())
    bars.push_back({"rigor gap", "vs allclose replica", "gap:replica", rigor_gap(r.vs_replica[0])});
  if (!r.vs_original.empty())
    bars.push_back(
        {"rigor gap", "vs original verdict", "gap:original", rigor_gap(r.vs_original[0])});
  if (r.profile_headline) {
    const audit::ProfileHeadline& h = *r.profile_headline;
    bars.push_back({"headline", "any violation", "any", h.judged.any_violation});
    bars.push_back({"headline", "tolerance-free floor", "tf", h.judged.tf_floor});
    bars.push_back(
        {"headline", "floor, replica-accepted", "tf:replica", h.replica_accepted.tf_floor});
  }
  const std::vector<std::string> tf = audit::tolerance_free_gates();
  for (const audit::GateRate& g : r.gates) {
    const bool is_tf = std::find(tf.begin(), tf.end(), g.gate) != tf.end();
    bars.push_back({"per gate", g.gate + (is_tf ? " (TF)" : ""), "gate:" + g.gate, g.fail});
  }
  return bars;
}

}  // namespace

std::string svg_rigor_gap(const AuditReport& r) {
  const std::vector<Bar> bars = bars_of(r);
  constexpr double kLeft = 190, kTrack = 420, kRow = 24, kTop = 40, kGroupGap = 22;
  int groups = 0;
  for (size_t i = 0; i < bars.size(); ++i) groups += i == 0 || bars[i].group != bars[i - 1].group;
  const double height = kTop + bars.size() * kRow + groups * kGroupGap + 30;
  svg::Canvas c(kLeft + kTrack + 150, height,
                fmt::format("Rigor gap and per-gate failure rates, profile {}", r.options.profile));
  c.text(10, 20,
         fmt::format("Rigor gap and failure rates (profile {}; bar = share of its denominator)",
                     r.options.profile),
         "start", 14);
  double y = kTop;
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    if (i == 0 || b.group != bars[i - 1].group) {
      y += kGroupGap;
      c.text(10, y - 6, b.group, "start", 12, " font-weight=\"bold\"");
    }
    const bool gap = b.group == "rigor gap";
    c.text(kLeft - 8, y + kRow * 0.65, b.label, "end", 12);
    c.rect(kLeft, y + 3, kTrack, kRow - 6, {"#eeeeee"});
    if (b.rate) {
      c.rect(kLeft, y + 3, kTrack * b.rate->value(), kRow - 6, {gap ? "#ee7733" : "#cc3311"},
             svg::attr("class", "bar") + svg::attr("data-key", b.key) +
                 fmt::format(" data-hits=\"{}\" data-total=\"{}\"", b.rate->hits, b.rate->total));
    }
    c.text(kLeft + kTrack + 8, y + kRow * 0.65, rate_text(b.rate), "start", 12);
    y += kRow;
  }
  if (bars.empty()) c.text(kLeft, kTop + 20, "no kernel judged under this profile");
  for (int pct = 0; pct <= 100; pct += 25) {
    const double x = kLeft + kTrack * pct / 100.0;
    c.line(x, kTop, x, y, {"none", "#999999", 0.5, "2,3"});
    c.text(x, y + 16, fmt::format("{}%", pct), "middle", 10);
  }
  return c.finish();
}

}  // namespace kcv::audit_report
