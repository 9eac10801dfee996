// File: src/audit/corpus_row.cpp
// One JSONL line -> CorpusRow, validated against the schema of ../shared/corpora/README.md.
// Only id, reference_code and candidate_code are required: a user with a kernel and its
// reference has those and nothing else. Every other key may be absent (strings default to "",
// level and problem_id to 0, the corpus to the file's stem: corpus_reader.cpp) or null where the
// schema allows it; present, it must have its type, and enumerated fields (language,
// reference_version, original_verdict) their values, since the report groups by them. An
// optional "contract" object is the kernel's declared contract (docs/01), checked here so that
// a typo is a malformed row rather than a silently weaker contract. Unknown keys are ignored (a
// newer corpus may add some). Errors name the field: "level: expected an integer, got string".
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

#include "audit/mac.hpp"
#include "audit/utf8.hpp"
#include "kcv/audit.hpp"

namespace kcv::audit {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 5> kLanguages = {"cuda", "triton", "cute", "tilelang",
                                                        "torch"};
constexpr std::array<std::string_view, 3> kReferenceVersions = {"v0", "v0.1", "head"};
constexpr std::array<std::string_view, 3> kVerdicts = {"accepted", "rejected", "compile_error"};

Error field_error(std::string_view field, std::string message) {
  return make_error(ErrorCode::kParse, fmt::format("{}: {}", field, message));
}

Expected<const json*> field(const json& row, std::string_view name) {
  auto it = row.find(name);
  if (it == row.end()) return field_error(name, "missing required field");
  return &*it;
}

template <size_t N>
Status check_enum(std::string_view name, const std::string& value,
                  const std::array<std::string_view, N>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return {};
  return field_error(name, fmt::format("unknown value '{}'", value));
}

Status get_string(const json& row, std::string_view name, std::string& out) {
  Expected<const json*> v = field(row, name);
  if (!v) return v.error();
  if (!(*v)->is_string())
    return field_error(name, fmt::format("expected a string, got {}", (*v)->type_name()));
  out = (*v)->get<std::string>();
  return {};
}

Status get_int(const json& row, std::string_view name, int& out) {
  Expected<const json*> v = field(row, name);
  if (!v) return v.error();
  if (!(*v)->is_number_integer())
    return field_error(name, fmt::format("expected an integer, got {}", (*v)->type_name()));
  const int64_t value = (*v)->get<int64_t>();
  if (value < 0 || value > 1'000'000)
    return field_error(name, fmt::format("out of range: {}", value));
  out = static_cast<int>(value);
  return {};
}

Status get_opt_string(const json& row, std::string_view name, std::optional<std::string>& out) {
  Expected<const json*> v = field(row, name);
  if (!v) return v.error();
  if ((*v)->is_null()) return {};
  if (!(*v)->is_string())
    return field_error(name, fmt::format("expected a string or null, got {}", (*v)->type_name()));
  out = (*v)->get<std::string>();
  return {};
}

Status get_opt_number(const json& row, std::string_view name, std::optional<double>& out) {
  Expected<const json*> v = field(row, name);
  if (!v) return v.error();
  if ((*v)->is_null()) return {};
  if (!(*v)->is_number())
    return field_error(name, fmt::format("expected a number or null, got {}", (*v)->type_name()));
  out = (*v)->get<double>();
  return {};
}

// A key that may be absent: keep the default then.
bool absent(const json& row, std::string_view name) { return row.find(name) == row.end(); }

Status get_contract(const json& row, std::optional<std::string>& out) {
  auto it = row.find("contract");
  if (it == row.end() || it->is_null()) return {};
  if (!it->is_object()) return field_error("contract", fmt::format("expected an object, got {}", it->type_name()));
  const std::string text = it->dump();
  auto c = parse_contract(text, "kernelbench");
  if (!c) return field_error("contract", c.error().message);
  out = text;
  return {};
}

Status fill(const json& j, CorpusRow& r) {
  for (std::string_view name : {"id", "reference_code", "candidate_code"}) {
    if (absent(j, name)) return field_error(name, "missing required field");
  }
  const std::pair<std::string_view, std::string*> strings[] = {
      {"id", &r.id},
      {"corpus", &r.corpus},
      {"source_repo", &r.source_repo},
      {"source_commit", &r.source_commit},
      {"source_path", &r.source_path},
      {"problem_name", &r.problem_name},
      {"reference_version", &r.reference_version},
      {"reference_code", &r.reference_code},
      {"candidate_code", &r.candidate_code},
      {"language", &r.language},
      {"original_harness", &r.original_harness}};
  for (const auto& [name, out] : strings) {
    if (absent(j, name)) continue;
    if (Status s = get_string(j, name, *out); !s) return s;
  }
  if (r.id.empty()) return field_error("id", "empty");
  if (!absent(j, "level")) {
    if (Status s = get_int(j, "level", r.level); !s) return s;
  }
  if (!absent(j, "problem_id")) {
    if (Status s = get_int(j, "problem_id", r.problem_id); !s) return s;
  }
  for (const auto& [name, out] : {std::pair{"model", &r.model}, std::pair{"original_verdict", &r.original_verdict},
                                  std::pair{"original_hardware", &r.original_hardware}}) {
    if (absent(j, name)) continue;
    if (Status s = get_opt_string(j, name, *out); !s) return s;
  }
  if (!absent(j, "original_speedup")) {
    if (Status s = get_opt_number(j, "original_speedup", r.original_speedup); !s) return s;
  }
  if (Status s = get_contract(j, r.contract_json); !s) return s;
  if (!r.language.empty()) {
    if (Status s = check_enum("language", r.language, kLanguages); !s) return s;
  }
  if (!r.reference_version.empty()) {
    if (Status s = check_enum("reference_version", r.reference_version, kReferenceVersions); !s) return s;
  }
  if (r.original_verdict) return check_enum("original_verdict", *r.original_verdict, kVerdicts);
  return {};
}

}  // namespace

Expected<CorpusRow> parse_corpus_row(std::string_view line) {
  if (const std::optional<Utf8Error> bad = first_invalid_utf8(line)) {
    // Still name the row when its id is readable with the bad bytes replaced.
    Error e = make_error(ErrorCode::kParse, bad->describe());
    const json j = json::parse(valid_utf8(line), nullptr, /*allow_exceptions=*/false);
    if (j.is_object()) {
      auto id = j.find("id");
      if (id != j.end() && id->is_string()) e.context = id->get<std::string>();
    }
    return e;
  }
  json j;
  try {
    j = json::parse(line);
  } catch (const json::parse_error& e) {
    return make_error(ErrorCode::kParse, fmt::format("invalid JSON: {}", e.what()));
  }
  if (!j.is_object())
    return make_error(ErrorCode::kParse,
                      fmt::format("row: expected an object, got {}", j.type_name()));
  CorpusRow row;
  Status s = fill(j, row);
  if (s) row.row_hash = row_content_hash(row);
  if (!s) {
    // Keep the id (when readable) as context, so the error record can name the row.
    auto id = j.find("id");
    if (id != j.end() && id->is_string()) {
      return make_error(s.error().code, s.error().message, id->get<std::string>());
    }
    return s.error();
  }
  return row;
}

std::string row_content_hash(const CorpusRow& row) {
  mac::Message m("kcv.row.1");
  m.text(row.reference_code).text(row.candidate_code).opt(row.contract_json);
  return mac::hex(mac::sha256(m.bytes()));
}

KernelInfo kernel_info_from(const CorpusRow& row) {
  KernelInfo k;
  k.kernel_id = row.id;
  k.corpus = row.corpus;
  k.level = row.level;
  k.problem_id = row.problem_id;
  k.problem_name = row.problem_name;
  k.language = row.language;
  k.original_verdict = row.original_verdict;
  k.row_hash = row.row_hash;
  return k;
}

}  // namespace kcv::audit
