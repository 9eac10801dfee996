// File: src/resource/ptx_module.cpp
// A small structural scanner for PTX text (not a full PTX parser): it finds function headers
// with a regex, matches the body braces, and splits bodies into statements. Braces inside a
// statement (vector operands `{%f1, %f2}`, initialisers) are balanced, so brace counting finds
// the end of a body without understanding instructions.
#include "resource/ptx_module.hpp"

#include <algorithm>
#include <cctype>
#include <regex>

#include "resource/text_scan.hpp"

namespace kcv::resource {
namespace {

constexpr std::string_view kParser = "PTX";

// Comments become spaces (newlines kept) so offsets and line numbers stay valid.
std::string strip_comments(std::string_view text) {
  std::string out(text);
  for (std::size_t i = 0; i + 1 < out.size(); ++i) {
    if (out[i] == '/' && out[i + 1] == '/') {
      while (i < out.size() && out[i] != '\n') out[i++] = ' ';
    } else if (out[i] == '/' && out[i + 1] == '*') {
      const std::size_t end = out.find("*/", i + 2);
      const std::size_t stop = end == std::string::npos ? out.size() : end + 2;
      for (; i < stop; ++i) {
        if (out[i] != '\n') out[i] = ' ';
      }
      --i;
    }
  }
  return out;
}

// Offsets of every '\n', so a line number is one binary search (PTX files can be megabytes).
class LineIndex {
 public:
  explicit LineIndex(std::string_view text) {
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\n') newlines_.push_back(i);
    }
  }
  std::size_t line_of(std::size_t offset) const {
    return 1 +
           static_cast<std::size_t>(std::lower_bound(newlines_.begin(), newlines_.end(), offset) -
                                    newlines_.begin());
  }

 private:
  std::vector<std::size_t> newlines_;
};

// Index just past the bracket matching text[open] ('(' or '{'); npos when unbalanced.
std::size_t match_close(std::string_view text, std::size_t open) {
  const char o = text[open];
  const char c = o == '(' ? ')' : '}';
  int depth = 0;
  for (std::size_t i = open; i < text.size(); ++i) {
    if (text[i] == o) ++depth;
    if (text[i] == c && --depth == 0) return i + 1;
  }
  return std::string_view::npos;
}

std::vector<std::string> split_operands(std::string_view s) {
  std::vector<std::string> ops;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    const char ch = i < s.size() ? s[i] : ',';
    if (ch == '[' || ch == '{' || ch == '(') ++depth;
    if (ch == ']' || ch == '}' || ch == ')') --depth;
    if (ch == ',' && depth == 0) {
      const std::string_view op = trim(s.substr(start, i - start));
      if (!op.empty()) ops.emplace_back(op);
      start = i + 1;
    }
  }
  return ops;
}

bool identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}

// Drops a leading "label:" (but not the "::" of an opcode like cta_group::1) and "@%p" / "@!%p".
std::string_view strip_label_and_guard(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && identifier_char(s[i])) ++i;
  if (i > 0 && i < s.size() && s[i] == ':' && (i + 1 == s.size() || s[i + 1] != ':'))
    s = trim(s.substr(i + 1));
  if (!s.empty() && s[0] == '@') {
    const std::size_t sp = s.find_first_of(" \t\r\n");
    s = sp == std::string_view::npos ? std::string_view{} : trim(s.substr(sp));
  }
  return s;
}

PtxStatement make_statement(std::string_view raw, std::size_t line) {
  std::string_view s = trim(raw);
  while (!s.empty() && (s[0] == '{' || s[0] == '}')) s = trim(s.substr(1));
  s = strip_label_and_guard(s);
  PtxStatement st;
  st.text = std::string(s);
  st.line = line;
  const std::size_t sp = s.find_first_of(" \t\r\n");
  st.opcode = std::string(s.substr(0, sp));
  if (sp != std::string_view::npos) st.operands = split_operands(s.substr(sp));
  return st;
}

std::vector<PtxStatement> split_statements(std::string_view text, const LineIndex& lines,
                                           std::size_t begin, std::size_t end) {
  std::vector<PtxStatement> out;
  std::size_t start = begin;
  for (std::size_t i = begin; i < end; ++i) {
    if (text[i] != ';') continue;
    const std::string_view raw = text.substr(start, i - start);
    const std::size_t lead = raw.find_first_not_of(" \t\r\n{}");
    PtxStatement st =
        make_statement(raw, lines.line_of(start + (lead == std::string_view::npos ? 0 : lead)));
    if (!st.opcode.empty()) out.push_back(std::move(st));
    start = i + 1;
  }
  return out;
}

int64_t thread_bound(const std::string& header, const char* directive) {
  const std::regex re(std::string(R"(\.)") + directive +
                      R"(\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?)");
  std::smatch m;
  if (!std::regex_search(header, m, re)) return 0;
  int64_t product = 1;
  for (int g = 1; g <= 3; ++g) {
    if (m[g].matched) product *= *parse_count(m[g].str());
  }
  return product;
}

// Blanks [begin, end) of `text`, keeping newlines.
void blank(std::string& text, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) {
    if (text[i] != '\n') text[i] = ' ';
  }
}

struct HeaderScan {
  std::size_t name_begin = 0, name_end = 0, stop = 0;  // stop: the '{' or ';' after the header
};

Expected<HeaderScan> scan_header(std::string_view t, const LineIndex& lines,
                                 std::size_t after_keyword, bool is_func) {
  HeaderScan h;
  std::size_t i = t.find_first_not_of(" \t\r\n", after_keyword);
  if (is_func && i != std::string_view::npos && t[i] == '(') {  // return parameters
    i = match_close(t, i);
    if (i != std::string_view::npos) i = t.find_first_not_of(" \t\r\n", i);
  }
  if (i == std::string_view::npos) {
    return line_error(kParser, lines.line_of(after_keyword), "", "function header without a name");
  }
  h.name_begin = i;
  h.name_end = t.find_first_of(" \t\r\n(;{", i);
  std::size_t j = h.name_end;
  while (j < t.size() && t[j] != '{' && t[j] != ';') {
    j = t[j] == '(' ? match_close(t, j) : j + 1;
    if (j == std::string_view::npos) break;
  }
  if (j == std::string_view::npos || j >= t.size()) {
    return line_error(kParser, lines.line_of(h.name_begin), t.substr(h.name_begin, 60),
                      "function header without a body or ';'");
  }
  h.stop = j;
  return h;
}

Status scan_functions(std::string_view t, const LineIndex& lines, std::string& outside,
                      PtxModule& module) {
  static const std::regex kFunc(R"(\.(entry|func)\b)");
  std::size_t pos = 0;
  std::match_results<std::string_view::const_iterator> m;
  while (std::regex_search(t.begin() + static_cast<std::ptrdiff_t>(pos), t.end(), m, kFunc)) {
    const std::size_t kw = pos + static_cast<std::size_t>(m.position(0));
    const bool is_func = m[1] == "func";
    auto h = scan_header(t, lines, kw + static_cast<std::size_t>(m.length(0)), is_func);
    if (!h) return h.error();
    const std::size_t line_begin =
        t.rfind('\n', kw) == std::string_view::npos ? 0 : t.rfind('\n', kw) + 1;
    if (t[h->stop] == ';') {  // a prototype
      blank(outside, line_begin, h->stop + 1);
      pos = h->stop + 1;
      continue;
    }
    const std::size_t body_end = match_close(t, h->stop);
    if (body_end == std::string_view::npos) {
      return line_error(kParser, lines.line_of(h->stop), "{",
                        "function body without its closing '}'");
    }
    PtxFunction f;
    f.name = std::string(t.substr(h->name_begin, h->name_end - h->name_begin));
    f.entry = !is_func;
    const std::string header(t.substr(kw, h->stop - kw));
    f.maxntid = thread_bound(header, "maxntid");
    if (f.maxntid == 0) f.maxntid = thread_bound(header, "reqntid");
    f.body = split_statements(t, lines, h->stop + 1, body_end - 1);
    f.body_text = std::string(t.substr(h->stop + 1, body_end - h->stop - 2));
    module.functions.push_back(std::move(f));
    blank(outside, line_begin, body_end);
    pos = body_end;
  }
  return {};
}

}  // namespace

Expected<PtxSharedVar> parse_shared_decl(const PtxStatement& s) {
  static const std::regex kDecl(
      R"(\.shared\s+(?:\.align\s+\d+\s+)?(?:\.v(\d)\s+)?\.(\w+)\s+([$\w]+)\s*((?:\[\s*\d*\s*\]\s*)*))");
  static const std::regex kDim(R"(\[\s*(\d*)\s*\])");
  const std::size_t at = s.text.find(".shared");
  std::smatch m;
  const std::string decl = s.text.substr(at == std::string::npos ? 0 : at);
  if (!std::regex_search(decl, m, kDecl))
    return line_error(kParser, s.line, s.text, "unrecognised .shared declaration");
  static const std::vector<std::pair<std::string, int64_t>> kSizes = {
      {"b8", 1},   {"u8", 1},  {"s8", 1},  {"b16", 2}, {"u16", 2},  {"s16", 2},   {"f16", 2},
      {"bf16", 2}, {"b32", 4}, {"u32", 4}, {"s32", 4}, {"f32", 4},  {"f16x2", 4}, {"bf16x2", 4},
      {"b64", 8},  {"u64", 8}, {"s64", 8}, {"f64", 8}, {"b128", 16}};
  const auto it = std::find_if(kSizes.begin(), kSizes.end(),
                               [&](const auto& p) { return p.first == m[2].str(); });
  if (it == kSizes.end())
    return line_error(kParser, s.line, s.text, "unknown .shared element type ." + m[2].str());
  PtxSharedVar v{m[3].str(), it->second * (m[1].matched ? *parse_count(m[1].str()) : 1)};
  const std::string dims = m[4].str();
  for (std::sregex_iterator d(dims.begin(), dims.end(), kDim), e; d != e; ++d) {
    v.bytes = (*d)[1].length() == 0 ? 0 : v.bytes * *parse_count((*d)[1].str());
  }
  return v;
}

Expected<PtxModule> scan_ptx(std::string_view text) {
  const std::string t = strip_comments(text);
  PtxModule module;
  static const std::regex kTarget(R"(\.target\s+(\w+))");
  std::smatch m;
  if (std::regex_search(t, m, kTarget)) module.target = m[1].str();
  const LineIndex lines(t);
  std::string outside = t;
  Status s = scan_functions(t, lines, outside, module);
  if (!s) return s.error();
  for (const PtxStatement& st : split_statements(outside, lines, 0, outside.size())) {
    if (st.text.find(".shared") == std::string::npos) continue;
    auto v = parse_shared_decl(st);
    if (!v) return v.error();
    module.module_shared.push_back(*v);
  }
  return module;
}

}  // namespace kcv::resource
