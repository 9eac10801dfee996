// File: include/kcv/audit_report.hpp
// The audit report (`kcv report STORE.db`, issue 3 item 5): one model assembled from the audit
// store, then four renderings of that same model — a terminal summary, JSON, three SVG figures
// and one self-contained HTML page that embeds them. Renderers are pure functions of the model,
// so the numbers in the terminal, the JSON and the page can never disagree. What every number
// means and its denominator: docs/09_report.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kcv/audit.hpp"
#include "kcv/expected.hpp"

namespace kcv::audit_report {

inline constexpr int kAuditReportSchemaVersion = 2;

struct Options {
  std::string profile = "strict";  // the profile of the differentials, sample and figures
  int sample_per_stratum = 3;
  uint64_t seed = 0;
  /// Corpus JSONL files read (at run time) for the original harness text of reverse cases.
  std::vector<std::string> corpora;
};

/// One gate's verdict on one kernel under the report's profile.
struct GateVerdict {
  std::string gate;
  std::string verdict;  // pass | fail | not_applicable | error
  std::string reason;
  std::optional<double> worst_ratio;
  std::string summary;  // the judge's evidence summary (for a pass: the tightest element and tau)
};

/// A kernel kcv accepts (judged, no verdict fails) that another judge rejects. Every one must
/// be explained in the report, so it carries all we know about it.
struct ReverseCase {
  std::string kernel_id;
  std::string corpus;
  std::string op_class;
  std::vector<std::string> rejected_by;  // "replica" and/or "original"
  std::optional<std::string> original_verdict;
  std::optional<std::string> replica_verdict;
  std::optional<std::string> original_harness;  // from Options::corpora, when found there
  std::string status;                           // kcv's kernel status
  std::string message;
  std::vector<GateVerdict> gates;
};

/// A kernel whose status is not ok (crash, timeout, compile_error, ...; also unfinished ones).
struct BadKernel {
  std::string kernel_id;
  std::string corpus;
  std::string status;
  std::string message;
};

struct SampleEntry {
  std::string kernel_id;
  std::string stratum;  // "<corpus>/<outcome>" (audit::hand_audit_sample)
  std::string status;
  std::string op_class;
  std::string language;
  std::optional<std::string> original_verdict;
  std::optional<std::string> replica_verdict;
  std::vector<std::string> failing_gates;
  std::vector<std::string> failing_findings;  // the finding of each failing gate ("" untyped)
};

/// The log10 histogram of worst_ratio (ratio 1 = the gate's threshold). Bins are right-closed:
/// bin i holds log10(ratio) in (lo + i*width, lo + (i+1)*width]; underflow holds ratio <= 10^lo
/// (zero included), overflow ratio > 10^hi.
struct MarginAxis {
  double lo = -6.0;
  double hi = 6.0;
  double width = 0.5;
  int bins() const { return static_cast<int>((hi - lo) / width + 0.5); }
};

struct MarginRow {
  std::string gate;
  std::vector<int64_t> pass;    // per bin, kernels whose verdict is pass; [0] underflow,
  std::vector<int64_t> fail;    // [1..bins] the bins, [bins+1] overflow (so bins()+2 entries)
  int64_t measured = 0;         // pass/fail verdicts with a worst_ratio
  int64_t unmeasured = 0;       // pass/fail verdicts without one (not measured or not finite)
  int64_t above_threshold = 0;  // measured with ratio > 1
  std::optional<double> median;
  std::optional<double> max;
};

struct AuditReport {
  std::string store_path;
  Options options;
  /// What the store's MACs say (audit::Store::verify()): every rendering leads with it, and a
  /// store that is not verified is marked as such in each.
  audit::Integrity integrity;
  int64_t kernels = 0;
  audit::Headline headline;                                // all profiles
  std::optional<audit::ProfileHeadline> profile_headline;  // the chosen profile, when judged
  std::vector<audit::GateRate> gates;                      // the chosen profile's gates
  std::vector<audit::FindingCount> findings;               // the chosen profile's findings
  std::vector<audit::RobustnessRow> robustness;  // the chosen profile, one row per choice
  std::vector<audit::RobustnessRow> by_profile;  // every profile as judged: the profile choice
  std::vector<audit::ClassRate> classes;         // the chosen profile's classes
  std::vector<audit::Differential> vs_replica;             // [0] all corpora, then per corpus
  std::vector<audit::Differential> vs_original;            // [0] all corpora, then per corpus
  std::vector<ReverseCase> reverse_cases;
  std::vector<SampleEntry> sample;
  std::vector<BadKernel> bad_kernels;
  MarginAxis axis;
  std::vector<MarginRow> margins;  // per gate of the chosen profile, gate order
};

/// Reads everything the report shows from `store` (read-only use).
Expected<AuditReport> build_report(const audit::Store& store, std::string store_path,
                                   const Options& options);

/// Bins `ratio` on `axis`: 0 underflow, 1..bins() the bins, bins()+1 overflow.
int margin_bin(const MarginAxis& axis, double ratio);

/// The integrity lines every rendering leads with: one line for a verified store; a loud
/// banner and the problems otherwise.
std::vector<std::string> integrity_lines(const audit::Integrity& integrity);
/// The stale-rows line ("" when none).
std::string stale_text(const AuditReport& r);

/// Share of the 2x2's "other accepts" column that kcv rejects (the rigor gap), as a Rate.
audit::Rate rigor_gap(const audit::Differential& d);

std::string render_report_json(const AuditReport& r);
std::string render_report_text(const AuditReport& r);
/// The three figures: standalone SVG elements (no XML prolog), text escaped.
std::string svg_rigor_gap(const AuditReport& r);
std::string svg_calibration(const AuditReport& r);
std::string svg_differential(const AuditReport& r);
/// One self-contained page: inline CSS and SVG, no scripts, no external resources.
std::string render_report_html(const AuditReport& r);

}  // namespace kcv::audit_report
