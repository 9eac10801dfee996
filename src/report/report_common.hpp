// File: src/report/report_common.hpp
// Pieces shared by the three report renderers: the stable verdict words of the report formats,
// how non-finite numbers are written, which replay line belongs to which gate, and the
// multi-line evidence text of a failing gate. Kept here so the table, the JSON and the JUnit
// XML can never disagree about a gate.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kcv/verify.hpp"

namespace kcv::report {

/// "pass", "fail", "not_applicable", "error": the words of the JSON schema (fixed by
/// kReportSchemaVersion, independent of any display name).
std::string_view verdict_word(Verdict v);

/// A number for people: 3 significant digits, "nan", "inf", "-inf".
std::string format_number(double x);

/// The replay line of results[index], if that gate failed with a failing probe. The report keeps
/// one line per failing gate in gate order; a line is matched by its probe token first.
std::optional<std::string> replay_for(const VerifyReport& r, std::size_t index);

/// Several lines describing a gate's evidence (worst element, ratios, bits lost, violations).
std::string evidence_details(const GateResult& g);

/// The text of one gate's evidence column: the summary, or the reason for n/a and error.
std::string evidence_line(const GateResult& g);

}  // namespace kcv::report
