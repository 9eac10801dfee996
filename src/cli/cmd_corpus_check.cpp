// File: src/cli/cmd_corpus_check.cpp
// `kcv corpus-check FILE.jsonl...`: reads corpora with the audit's reader (audit::read_corpora,
// the very rules `kcv audit` applies: UTF-8, the schema, one row per id across the files) and
// prints, per file, row counts by language and level and every malformed row (line, id, the
// field at fault, or the row that holds its id first). Exit 0 when every row is valid, 1 when
// some row is malformed, 2 when a file cannot be read.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "cli/cli_error.hpp"
#include "cli/tools.hpp"
#include "kcv/audit.hpp"

namespace kcv::cli {
namespace {

struct FileTally {
  std::map<std::pair<std::string, int>, int64_t> by_language_level;
  std::vector<audit::RowError> errors;
  int64_t rows = 0;
};

void print_tally(const std::string& path, const FileTally& t) {
  fmt::print("{}: {} row(s), {} malformed\n", path, t.rows, t.errors.size());
  for (const auto& [key, n] : t.by_language_level) {
    fmt::print("  {:<9} L{}  {:>6}\n", key.first, key.second, n);
  }
  for (const audit::RowError& e : t.errors) {
    fmt::print("  malformed line {}{}: {}\n", e.line, e.id.empty() ? "" : " (" + e.id + ")",
               e.message);
  }
}

}  // namespace

void configure_corpus_check(CLI::App& cmd, CliOptions& o) {
  cmd.add_option("files", o.inputs, "JSONL corpora (schema: ../shared/corpora/README.md)")
      ->required();
}

ExitStatus run_corpus_check(const CliOptions& o) {
  std::map<std::string, FileTally> tallies;
  const audit::ReadCounts counts = unwrap(audit::read_corpora(
      o.inputs, {[&](audit::CorpusRow&& r) {
                   FileTally& t = tallies[r.file];
                   ++t.rows;
                   ++t.by_language_level[{r.language, r.level}];
                 },
                 [&](audit::RowError&& e) { tallies[e.file].errors.push_back(std::move(e)); }}));
  std::vector<std::string> printed;
  for (const std::string& path : o.inputs) {
    if (std::find(printed.begin(), printed.end(), path) != printed.end()) continue;
    printed.push_back(path);
    print_tally(path, tallies[path]);
  }
  fmt::print("total: {} row(s), {} malformed, in {} file(s)\n", counts.rows, counts.errors,
             o.inputs.size());
  return counts.errors == 0 ? ExitStatus::kSuccess : ExitStatus::kGateFailed;
}

}  // namespace kcv::cli
