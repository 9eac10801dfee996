// File: python/src/core_corpus.cpp
// kcv._core.read_corpus and parse_contract: the C++ corpus reader (JSONL rows, schema in
// ../shared/corpora/README.md; malformed lines become errors naming the field, reading goes on)
// with its deterministic sharding, and the strict contract parser (normalised JSON back, or
// ValueError naming the bad field).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "core_common.hpp"
#include "kcv/audit.hpp"
#include "kcv/contract.hpp"

namespace kcv::py {
namespace {

using audit::CorpusRow;
using audit::RowError;

nb::dict row_dict(const CorpusRow& r) {
  nb::dict d;
  d["id"] = r.id;
  d["corpus"] = r.corpus;
  d["source_repo"] = r.source_repo;
  d["source_commit"] = r.source_commit;
  d["source_path"] = r.source_path;
  d["level"] = r.level;
  d["problem_id"] = r.problem_id;
  d["problem_name"] = r.problem_name;
  d["reference_version"] = r.reference_version;
  d["reference_code"] = r.reference_code;
  d["candidate_code"] = r.candidate_code;
  d["language"] = r.language;
  d["model"] = r.model;
  d["original_harness"] = r.original_harness;
  d["original_verdict"] = r.original_verdict;
  d["original_speedup"] = r.original_speedup;
  d["original_hardware"] = r.original_hardware;
  d["contract"] = r.contract_json ? from_json_text(*r.contract_json) : nb::none();
  d["row_hash"] = r.row_hash;
  d["file"] = r.file;
  d["line"] = r.line;
  return d;
}

nb::dict error_dict(const RowError& e) {
  nb::dict d;
  d["file"] = e.file;
  d["line"] = e.line;
  d["id"] = e.id;
  d["message"] = e.message;
  d["corpus"] = e.corpus;
  d["row_hash"] = e.row_hash;
  d["duplicate"] = e.duplicate;
  d["kernel_id"] = audit::malformed_kernel_id(e);
  return d;
}

std::pair<nb::list, nb::list> read_corpora(const std::vector<std::string>& paths,
                                           const std::string& shard_text) {
  auto shard = audit::parse_shard(shard_text);
  if (!shard) raise(shard.error(), "shard");
  std::vector<CorpusRow> rows;
  std::vector<RowError> errors;
  Expected<audit::ReadCounts> counts = make_error(ErrorCode::kInternal, "");
  {
    nb::gil_scoped_release unlocked;
    audit::CorpusVisitor visit{[&](CorpusRow&& r) { rows.push_back(std::move(r)); },
                               [&](RowError&& e) { errors.push_back(std::move(e)); }};
    counts = audit::read_corpora(paths, visit, *shard);
  }
  if (!counts) raise(counts.error());
  nb::list row_list, error_list;
  for (const CorpusRow& r : rows) row_list.append(row_dict(r));
  for (const RowError& e : errors) error_list.append(error_dict(e));
  return {row_list, error_list};
}

std::pair<nb::list, nb::list> read_corpus(const std::string& path, const std::string& shard_text) {
  return read_corpora({path}, shard_text);
}

std::string normalized_contract(const std::string& json) {
  auto c = parse_contract(json);
  if (!c) raise(c.error());
  return contract_to_json(*c);
}

}  // namespace

void bind_corpus(nb::module_& m) {
  m.def("read_corpus", &read_corpus, nb::arg("path"), nb::arg("shard") = "0/1",
        "(rows, errors) of a JSONL corpus in this shard; rows are CorpusRow dicts, errors RowError "
        "dicts (file, line, id, message). An unreadable file raises.");
  m.def("read_corpora", &read_corpora, nb::arg("paths"), nb::arg("shard") = "0/1",
        "read_corpus over several files with one id rule across them (audit::read_corpora): a "
        "later line with an id already seen is an error whose 'duplicate' names the first. "
        "Errors carry 'kernel_id' (the id their malformed kernel is recorded under), 'corpus' "
        "and 'row_hash'; rows carry 'row_hash', 'file' and 'line'.");
  m.def("parse_contract", &normalized_contract, nb::arg("json"),
        "The contract, normalised to kcv's JSON; ValueError naming the bad field.");
}

}  // namespace kcv::py
