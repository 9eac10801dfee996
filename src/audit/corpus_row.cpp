// File: src/audit/corpus_row.cpp
// One JSONL line -> CorpusRow, validated against the schema of ../shared/corpora/README.md.
// Every key of the schema must be present; model, original_verdict, original_speedup and
// original_hardware may be null. Enumerated fields (language, reference_version,
// original_verdict) are checked, since the report groups by them. Unknown keys are ignored
// (a newer corpus may add some). Errors name the field: "level: expected an integer, got string".
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

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

Status fill(const json& j, CorpusRow& r) {
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
    if (Status s = get_string(j, name, *out); !s) return s;
  }
  if (r.id.empty()) return field_error("id", "empty");
  if (Status s = get_int(j, "level", r.level); !s) return s;
  if (Status s = get_int(j, "problem_id", r.problem_id); !s) return s;
  if (Status s = get_opt_string(j, "model", r.model); !s) return s;
  if (Status s = get_opt_string(j, "original_verdict", r.original_verdict); !s) return s;
  if (Status s = get_opt_number(j, "original_speedup", r.original_speedup); !s) return s;
  if (Status s = get_opt_string(j, "original_hardware", r.original_hardware); !s) return s;
  if (Status s = check_enum("language", r.language, kLanguages); !s) return s;
  if (Status s = check_enum("reference_version", r.reference_version, kReferenceVersions); !s)
    return s;
  if (r.original_verdict) return check_enum("original_verdict", *r.original_verdict, kVerdicts);
  return {};
}

}  // namespace

Expected<CorpusRow> parse_corpus_row(std::string_view line) {
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

KernelInfo kernel_info_from(const CorpusRow& row) {
  KernelInfo k;
  k.kernel_id = row.id;
  k.corpus = row.corpus;
  k.level = row.level;
  k.problem_id = row.problem_id;
  k.problem_name = row.problem_name;
  k.language = row.language;
  k.original_verdict = row.original_verdict;
  return k;
}

}  // namespace kcv::audit
