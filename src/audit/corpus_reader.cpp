// File: src/audit/corpus_reader.cpp
// Streams a JSONL corpus line by line (rows hold whole source files, so a corpus is never held
// in memory). A bad line becomes a RowError and reading goes on; only an unreadable file is an
// Error. A row without a corpus belongs to the file's stem. Every line is parsed, then filtered
// by its id (a malformed line by shard_key), so each malformed row is reported by exactly one
// shard, like every valid row. Every text of a RowError is valid UTF-8 (a line that is not is
// shown with U+FFFD for its bad bytes), so each crosses into Python and onto a terminal intact.
// read_corpora reads several files with one id rule across them: the first line with an id
// owns it, and every later one is a duplicate (a RowError naming the first).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "audit/mac.hpp"
#include "audit/utf8.hpp"
#include "kcv/audit.hpp"

namespace kcv::audit {
namespace {

bool blank(const std::string& line) { return line.find_first_not_of(" \t\r") == std::string::npos; }

// The corpus a malformed line names for itself, when it can be read.
std::string readable_corpus(const std::string& line) {
  const nlohmann::json j = nlohmann::json::parse(valid_utf8(line), nullptr, false);
  if (!j.is_object()) return {};
  auto it = j.find("corpus");
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string line_hash(const std::string& line) {
  mac::Message m("kcv.malformed-row.1");
  m.text(line);
  return mac::hex(mac::sha256(m.bytes()));
}

std::string file_name(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

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
      row->line = number;
      row->file = path;
      if (visit.on_row) visit.on_row(std::move(row).value());
      continue;
    }
    RowError e{path, number, valid_utf8(row.error().context), valid_utf8(row.error().message)};
    if (!shard.contains(shard_key(e))) {
      ++counts.skipped;
      continue;
    }
    e.corpus = readable_corpus(line);
    if (e.corpus.empty()) e.corpus = stem;
    e.row_hash = line_hash(line);
    ++counts.errors;
    if (visit.on_error) visit.on_error(std::move(e));
  }
  if (in.bad())
    return make_error(ErrorCode::kIo, fmt::format("read failed after line {}", number), path);
  return counts;
}

Expected<ReadCounts> read_corpora(const std::vector<std::string>& paths, const CorpusVisitor& visit,
                                  const Shard& shard) {
  std::map<std::string, std::string> first;  // id -> "<file>:<line>" of the line that owns it
  ReadCounts total;
  const auto owner = [&](const std::string& id, const std::string& file, int64_t line) {
    const std::string where = fmt::format("{}:{}", file, line);
    auto [it, fresh] = first.emplace(id, where);
    return fresh ? std::string() : it->second;
  };
  for (const std::string& path : paths) {
    CorpusVisitor inner;
    inner.on_row = [&](CorpusRow&& r) {
      const std::string dup = owner(r.id, path, r.line);
      if (dup.empty()) {
        if (visit.on_row) visit.on_row(std::move(r));
        return;
      }
      RowError e{
          path, r.line, r.id,
          fmt::format("duplicate id: '{}' is the row at {}; this row is not audited", r.id, dup)};
      e.corpus = r.corpus;
      e.row_hash = r.row_hash;
      e.duplicate = dup;
      --total.rows;
      ++total.errors;
      if (visit.on_error) visit.on_error(std::move(e));
    };
    inner.on_error = [&](RowError&& e) {
      if (!e.id.empty()) {
        e.duplicate = owner(e.id, path, e.line);
        if (!e.duplicate.empty())
          e.message = fmt::format(
              "duplicate id: '{}' is the row at {}; this row is also "
              "malformed: {}",
              e.id, e.duplicate, e.message);
      }
      if (visit.on_error) visit.on_error(std::move(e));
    };
    Expected<ReadCounts> counts = read_corpus(path, inner, shard);
    if (!counts) return counts.error();
    total.rows += counts->rows;
    total.errors += counts->errors;
    total.skipped += counts->skipped;
  }
  return total;
}

std::string malformed_kernel_id(const RowError& e) {
  if (e.id.empty()) return shard_key(e);
  if (e.duplicate.empty()) return e.id;
  return fmt::format("{}@{}:{}", e.id, file_name(e.file), e.line);
}

}  // namespace kcv::audit
