// File: src/cli/cmd_corpus_check.cpp
// `kcv corpus-check FILE.jsonl...`: reads corpora with the audit's reader and prints, per file,
// row counts by language and level and every malformed row (line, id, the field at fault).
// Exit 0 when every row is valid, 1 when some row is malformed, 2 when a file cannot be read.
#include <fmt/format.h>

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
};

void print_tally(const std::string& path, const audit::ReadCounts& counts, const FileTally& t) {
  fmt::print("{}: {} row(s), {} malformed\n", path, counts.rows, counts.errors);
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
  int64_t rows = 0;
  int64_t malformed = 0;
  for (const std::string& path : o.inputs) {
    FileTally t;
    const audit::ReadCounts counts = unwrap(
        audit::read_corpus(path, {[&](audit::CorpusRow&& r) {
                                    ++t.by_language_level[{r.language, r.level}];
                                  },
                                  [&](audit::RowError&& e) { t.errors.push_back(std::move(e)); }}));
    print_tally(path, counts, t);
    rows += counts.rows;
    malformed += counts.errors;
  }
  fmt::print("total: {} row(s), {} malformed, in {} file(s)\n", rows, malformed, o.inputs.size());
  return malformed == 0 ? ExitStatus::kSuccess : ExitStatus::kGateFailed;
}

}  // namespace kcv::cli
