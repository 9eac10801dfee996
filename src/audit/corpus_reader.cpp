// File: src/audit/corpus_reader.cpp
// Streams a JSONL corpus line by line (rows hold whole source files, so a corpus is never held
// in memory). A bad line becomes a RowError and reading goes on; only an unreadable file is an
// Error. A row without a corpus belongs to the file's stem. Every line is parsed, then filtered
// by its id (a malformed line by shard_key), so each malformed row is reported by exactly one
// shard, like every valid row.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "kcv/audit.hpp"

namespace kcv::audit {
namespace {

bool blank(const std::string& line) { return line.find_first_not_of(" \t\r") == std::string::npos; }

}  // namespace

Expected<ReadCounts> read_corpus(const std::string& path, const CorpusVisitor& visit,
                                 const Shard& shard) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kNotFound, "cannot open corpus file", path);
  ReadCounts counts;
  const std::string stem = std::filesystem::path(path).stem().string();  // a row's corpus by default
  std::string line;
  int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (blank(line)) continue;
    Expected<CorpusRow> row = parse_corpus_row(line);
    if (row) {
      if (!shard.contains(row->id)) {
        ++counts.skipped;
        continue;
      }
      ++counts.rows;
      if (row->corpus.empty()) row->corpus = stem;
      if (visit.on_row) visit.on_row(std::move(row).value());
      continue;
    }
    RowError e{path, number, row.error().context, row.error().message};
    if (!shard.contains(shard_key(e))) {
      ++counts.skipped;
      continue;
    }
    ++counts.errors;
    if (visit.on_error) visit.on_error(std::move(e));
  }
  if (in.bad())
    return make_error(ErrorCode::kIo, fmt::format("read failed after line {}", number), path);
  return counts;
}

}  // namespace kcv::audit
