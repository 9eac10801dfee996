// File: tests/unit/audit/corpus_reader_test.cpp
// The corpus reader on hand-written rows (valid, and malformed in each way the schema can be
// broken): every malformed line becomes an error record naming the field and the line, and
// reading continues. Sharding partitions rows exactly. On ../shared/corpora (when present) the
// row counts equal those in each corpus's stats.json and no row is malformed.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "audit_fixtures.hpp"

namespace kcv::audit {
namespace {

using testing::ScratchDir;
using testing::toy_row;

std::string dump(const nlohmann::json& j) { return j.dump(); }

Error parse_error(const std::string& line) {
  Expected<CorpusRow> row = parse_corpus_row(line);
  EXPECT_FALSE(row.has_value()) << line;
  return row ? Error{} : row.error();
}

TEST(CorpusRow, ParsesEveryField) {
  nlohmann::json j = toy_row("a/r/L2/P7", 2, "triton");
  j["model"] = "toy-model";
  j["original_hardware"] = "toy GPU";
  Expected<CorpusRow> row = parse_corpus_row(dump(j));
  ASSERT_TRUE(row.has_value()) << row.error().to_string();
  EXPECT_EQ(row->id, "a/r/L2/P7");
  EXPECT_EQ(row->level, 2);
  EXPECT_EQ(row->problem_id, 7);
  EXPECT_EQ(row->language, "triton");
  EXPECT_EQ(row->model, "toy-model");
  EXPECT_EQ(row->original_verdict, "accepted");
  EXPECT_EQ(row->original_speedup, 1.5);
  EXPECT_EQ(row->original_hardware, "toy GPU");
  EXPECT_EQ(row->candidate_code, "class ModelNew: pass");
}

TEST(CorpusRow, NullableFieldsMayBeNull) {
  nlohmann::json j = toy_row("a");
  j["original_verdict"] = nullptr;
  j["original_speedup"] = nullptr;
  Expected<CorpusRow> row = parse_corpus_row(dump(j));
  ASSERT_TRUE(row.has_value()) << row.error().to_string();
  EXPECT_FALSE(row->original_verdict.has_value());
  EXPECT_FALSE(row->original_speedup.has_value());
  EXPECT_FALSE(row->model.has_value());
}

// What a user naturally has: an id, the reference and the candidate. Nothing else is needed.
TEST(CorpusRow, OnlyIdAndTheTwoCodesAreRequired) {
  const nlohmann::json j = {{"id", "mine/1"}, {"reference_code", "class Model: pass"},
                            {"candidate_code", "class ModelNew: pass"}};
  Expected<CorpusRow> row = parse_corpus_row(dump(j));
  ASSERT_TRUE(row.has_value()) << row.error().to_string();
  EXPECT_EQ(row->level, 0);
  EXPECT_EQ(row->language, "");
  EXPECT_FALSE(row->contract_json.has_value());
  for (const char* key : {"id", "reference_code", "candidate_code"}) {
    nlohmann::json less = j;
    less.erase(key);
    EXPECT_EQ(parse_error(dump(less)).message, std::string(key) + ": missing required field");
  }
}

TEST(CorpusRow, AContractIsCheckedWhereItIsRead) {
  nlohmann::json j = toy_row("a");
  j["contract"] = {{"profile", "fast-math"}, {"deterministic", false}};
  Expected<CorpusRow> row = parse_corpus_row(dump(j));
  ASSERT_TRUE(row.has_value()) << row.error().to_string();
  ASSERT_TRUE(row->contract_json.has_value());
  EXPECT_NE(row->contract_json->find("fast-math"), std::string::npos);
  j["contract"] = {{"profil", "fast-math"}};  // a typo must not silently weaken a contract
  EXPECT_NE(parse_error(dump(j)).message.find("contract"), std::string::npos);
}

TEST(CorpusReader, ARowWithoutACorpusBelongsToTheFile) {
  ScratchDir dir;
  const std::string path = dir.file("mine.jsonl");
  std::ofstream(path) << R"({"id": "x", "reference_code": "r", "candidate_code": "c"})" << "\n";
  std::vector<CorpusRow> rows;
  ASSERT_TRUE(read_corpus(path, CorpusVisitor{[&](CorpusRow&& r) { rows.push_back(std::move(r)); }, {}}));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].corpus, "mine");
}

TEST(CorpusRow, ErrorsNameTheField) {
  nlohmann::json missing = toy_row("a");
  missing.erase("candidate_code");
  EXPECT_EQ(parse_error(dump(missing)).message, "candidate_code: missing required field");
  nlohmann::json wrong_type = toy_row("a");
  wrong_type["level"] = "1";
  EXPECT_EQ(parse_error(dump(wrong_type)).message, "level: expected an integer, got string");
  nlohmann::json fractional = toy_row("a");
  fractional["problem_id"] = 1.5;
  EXPECT_EQ(parse_error(dump(fractional)).message, "problem_id: expected an integer, got number");
  nlohmann::json verdict = toy_row("a");
  verdict["original_verdict"] = "maybe";
  EXPECT_EQ(parse_error(dump(verdict)).message, "original_verdict: unknown value 'maybe'");
  nlohmann::json speedup = toy_row("a");
  speedup["original_speedup"] = "fast";
  EXPECT_EQ(parse_error(dump(speedup)).message,
            "original_speedup: expected a number or null, got string");
  nlohmann::json language = toy_row("a");
  language["language"] = "fortran";
  EXPECT_EQ(parse_error(dump(language)).message, "language: unknown value 'fortran'");
}

TEST(CorpusRow, ErrorKeepsTheIdWhenReadable) {
  nlohmann::json j = toy_row("keep/me");
  j["level"] = nullptr;
  EXPECT_EQ(parse_error(dump(j)).context, "keep/me");
  j["id"] = 5;
  const Error e = parse_error(dump(j));
  EXPECT_EQ(e.context, "");
  EXPECT_EQ(e.message, "id: expected a string, got number");
}

TEST(CorpusRow, RejectsInvalidJsonAndNonObjects) {
  EXPECT_NE(parse_error("{\"id\": ").message.find("invalid JSON"), std::string::npos);
  EXPECT_EQ(parse_error("[1,2]").message, "row: expected an object, got array");
}

TEST(CorpusReader, ReportsEveryMalformedLineAndKeepsReading) {
  ScratchDir dir;
  const std::string path = dir.file("rows.jsonl");
  nlohmann::json bad_level = toy_row("bad/level");
  bad_level["level"] = "two";
  {
    std::ofstream out(path);
    out << dump(toy_row("ok/1")) << "\n"
        << "not json at all\n"
        << "\n"
        << dump(bad_level) << "\n"
        << dump(toy_row("ok/2")) << "\n";  // line 5
  }
  std::vector<std::string> ids;
  std::vector<RowError> errors;
  Expected<ReadCounts> counts = read_corpus(path, {[&](CorpusRow&& r) { ids.push_back(r.id); },
                                                   [&](RowError&& e) { errors.push_back(e); }});
  ASSERT_TRUE(counts.has_value()) << counts.error().to_string();
  EXPECT_EQ(counts->rows, 2);
  EXPECT_EQ(counts->errors, 2);
  EXPECT_EQ(ids, (std::vector<std::string>{"ok/1", "ok/2"}));
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].line, 2);
  EXPECT_EQ(errors[0].id, "");
  EXPECT_EQ(errors[1].line, 4);
  EXPECT_EQ(errors[1].id, "bad/level");
  EXPECT_EQ(errors[1].message, "level: expected an integer, got string");
}

// A line that is not UTF-8 is a malformed row naming the byte and its column (and the row, when
// its id is readable); what Python's strict decoder refuses is refused here too, and every text
// handed on is valid UTF-8.
TEST(CorpusRow, ALineThatIsNotUtf8IsMalformedNamingTheByte) {
  nlohmann::json j = toy_row("bad/utf8");
  j["candidate_code"] = "# caf@";
  std::string line = dump(j);
  line[line.find('@')] = '\xff';
  Error e = parse_error(line);
  EXPECT_EQ(e.context, "bad/utf8");
  EXPECT_EQ(e.message, fmt::format("not UTF-8: byte 0xff at column {}", line.find('\xff') + 1));
  for (const std::string bad : {"\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82"}) {
    j["candidate_code"] = "#@";
    std::string l = dump(j);
    l.replace(l.find('@'), 1, bad);
    EXPECT_NE(parse_error(l).message.find("not UTF-8"), std::string::npos) << l;
  }
  j["candidate_code"] = "# caf\u00e9 \u20ac \U0001F600";  // 2, 3 and 4 byte forms
  EXPECT_TRUE(parse_corpus_row(dump(j)).has_value());

  ScratchDir dir;
  const std::string path = dir.file("rows.jsonl");
  std::ofstream(path) << line << "\n"
                      << "{\"id\": \"x\xfe\", \"corpus\": \"mine\"}\n";
  std::vector<RowError> errors;
  ASSERT_TRUE(read_corpus(path, {nullptr, [&](RowError&& e) { errors.push_back(e); }}));
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].corpus, "toy");
  EXPECT_EQ(errors[1].id, "x\xef\xbf\xbd");  // the bad byte as U+FFFD
  EXPECT_EQ(errors[1].corpus, "mine");
  EXPECT_EQ(errors[1].row_hash.size(), 64u);
}

// One id, one row, across all the files of a read: later lines with the id are duplicates (a
// malformed one included), each naming the first; the first keeps the id.
TEST(CorpusReader, ADuplicateIdIsAnErrorNamingTheFirstRow) {
  ScratchDir dir;
  const std::string a = dir.file("a.jsonl"), b = dir.file("b.jsonl");
  nlohmann::json bad = toy_row("dup");
  bad["level"] = "two";
  std::ofstream(a) << dump(toy_row("dup")) << "\n" << dump(toy_row("other")) << "\n";
  std::ofstream(b) << dump(toy_row("dup")) << "\n" << dump(bad) << "\n";
  std::vector<std::string> ids;
  std::vector<RowError> errors;
  Expected<ReadCounts> counts = read_corpora({a, b}, {[&](CorpusRow&& r) { ids.push_back(r.id); },
                                                      [&](RowError&& e) { errors.push_back(e); }});
  ASSERT_TRUE(counts.has_value());
  EXPECT_EQ(counts->rows, 2);
  EXPECT_EQ(counts->errors, 2);
  EXPECT_EQ(ids, (std::vector<std::string>{"dup", "other"}));
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].duplicate, a + ":1");
  EXPECT_EQ(errors[0].message,
            fmt::format("duplicate id: 'dup' is the row at {}:1; this row is not audited", a));
  EXPECT_EQ(malformed_kernel_id(errors[0]), "dup@b.jsonl:1");
  EXPECT_NE(errors[1].message.find("also malformed: level: expected an integer"),
            std::string::npos);
  EXPECT_EQ(malformed_kernel_id(errors[1]), "dup@b.jsonl:2");
}

// The row hash covers what a verdict judges: the two codes and the contract, nothing else.
TEST(CorpusRow, TheRowHashFollowsTheCodeAndTheContract) {
  nlohmann::json j = toy_row("h");
  const std::string base = parse_corpus_row(dump(j)).value().row_hash;
  EXPECT_EQ(base.size(), 64u);
  j["original_harness"] = "another harness";
  j["level"] = 3;
  EXPECT_EQ(parse_corpus_row(dump(j)).value().row_hash, base);
  j["candidate_code"] = "class ModelNew: pass  # edited";
  EXPECT_NE(parse_corpus_row(dump(j)).value().row_hash, base);
  j = toy_row("h");
  j["contract"] = {{"deterministic", false}};
  EXPECT_NE(parse_corpus_row(dump(j)).value().row_hash, base);
}

TEST(CorpusReader, MissingFileIsAnError) {
  Expected<ReadCounts> counts = read_corpus("/nonexistent/kcv/rows.jsonl", {});
  ASSERT_FALSE(counts.has_value());
  EXPECT_EQ(counts.error().code, ErrorCode::kNotFound);
}

TEST(Shard, FnvMatchesPublishedVectors) {
  // FNV-1a 64 test vectors from the reference (Fowler/Noll/Vo) test suite.
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
}

TEST(Shard, ParsesAndRejects) {
  Expected<Shard> s = parse_shard("2/5");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 5);
  for (const char* bad : {"5/5", "-1/4", "1", "a/4", "1/0", "1/4x", "/4"}) {
    EXPECT_FALSE(parse_shard(bad).has_value()) << bad;
  }
}

TEST(Shard, ShardsPartitionTheRowsExactly) {
  ScratchDir dir;
  const std::string path = dir.file("rows.jsonl");
  constexpr int kRows = 200;
  {
    std::ofstream out(path);
    for (int i = 0; i < kRows; ++i) out << dump(toy_row(testing::kid(i))) << "\n";
    out << "broken line\n";
  }
  constexpr int kShards = 7;
  std::multiset<std::string> seen;
  int64_t errors = 0;
  for (int i = 0; i < kShards; ++i) {
    Expected<ReadCounts> c = read_corpus(
        path, {[&](CorpusRow&& r) { seen.insert(r.id); }, [&](RowError&&) { ++errors; }},
        Shard{i, kShards});
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(c->rows + c->errors + c->skipped, kRows + 1);
    EXPECT_GT(c->rows, 0) << "shard " << i << " is empty: the hash does not spread";
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kRows));
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), static_cast<size_t>(kRows));
  EXPECT_EQ(errors, 1);  // the malformed line belongs to exactly one shard
}

// ../shared/corpora, read at run time (never copied into the repository).
TEST(RealCorpora, RowCountsMatchStatsAndNoRowIsMalformed) {
  const std::filesystem::path dir = KCV_CORPORA_DIR;
  if (!std::filesystem::exists(dir / "README.md")) GTEST_SKIP() << "no corpora at " << dir;
  int corpora = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".jsonl") continue;
    std::filesystem::path stats_path = entry.path();
    stats_path.replace_extension(".stats.json");
    ASSERT_TRUE(std::filesystem::exists(stats_path)) << stats_path;
    const nlohmann::json stats = nlohmann::json::parse(std::ifstream(stats_path));
    std::map<std::string, int64_t> by_language;
    std::vector<RowError> errors;
    Expected<ReadCounts> c =
        read_corpus(entry.path().string(), {[&](CorpusRow&& r) { ++by_language[r.language]; },
                                            [&](RowError&& e) { errors.push_back(e); }});
    ASSERT_TRUE(c.has_value()) << c.error().to_string();
    for (const RowError& e : errors) ADD_FAILURE() << e.file << ":" << e.line << ": " << e.message;
    EXPECT_EQ(c->rows, stats["counts"]["rows"].get<int64_t>()) << entry.path();
    for (const auto& [language, n] : stats["counts"]["by_language"].items()) {
      EXPECT_EQ(by_language[language], n.get<int64_t>()) << entry.path() << " " << language;
    }
    ++corpora;
  }
  EXPECT_GT(corpora, 0);
}

}  // namespace
}  // namespace kcv::audit
