// File: src/report/junit.cpp
// JUnit XML for CI dashboards: one <testsuite> per verified kernel, one <testcase> per gate
// (classname "kcv.<op>", name the gate code). A failed gate is a <failure> whose message is the
// evidence summary and whose text holds the full evidence and the replay line; a gate that does
// not apply is <skipped>; a gate kcv could not decide is an <error>. Built with pugixml so that
// escaping is never hand-written.
#include <fmt/format.h>

#include <pugixml.hpp>
#include <sstream>

#include "kcv/report.hpp"
#include "report/report_common.hpp"

namespace kcv {
namespace {

struct Counts {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  void add(Verdict v) {
    ++tests;
    failures += v == Verdict::kFail;
    errors += v == Verdict::kError;
    skipped += v == Verdict::kNotApplicable;
  }
  void write(pugi::xml_node node) const {
    node.append_attribute("tests") = tests;
    node.append_attribute("failures") = failures;
    node.append_attribute("errors") = errors;
    node.append_attribute("skipped") = skipped;
  }
};

void add_property(pugi::xml_node props, const char* name, const std::string& value) {
  pugi::xml_node p = props.append_child("property");
  p.append_attribute("name") = name;
  p.append_attribute("value") = value.c_str();
}

void add_testcase(pugi::xml_node suite, const VerifyReport& r, std::size_t i) {
  const GateResult& g = r.results[i];
  pugi::xml_node tc = suite.append_child("testcase");
  tc.append_attribute("classname") = fmt::format("kcv.{}", r.op).c_str();
  tc.append_attribute("name") = std::string(gate_code(g.gate)).c_str();
  const std::string line = report::evidence_line(g);
  if (g.verdict == Verdict::kFail) {
    pugi::xml_node f = tc.append_child("failure");
    f.append_attribute("message") = line.c_str();
    std::string text = report::evidence_details(g);
    if (auto replay = report::replay_for(r, i)) text += "replay: " + *replay + "\n";
    f.text().set(text.c_str());
  } else if (g.verdict == Verdict::kNotApplicable) {
    tc.append_child("skipped").append_attribute("message") = line.c_str();
  } else if (g.verdict == Verdict::kError) {
    pugi::xml_node e = tc.append_child("error");
    e.append_attribute("message") = line.c_str();
    e.text().set(report::evidence_details(g).c_str());
  }
}

void add_suite(pugi::xml_node root, const VerifyReport& r) {
  pugi::xml_node suite = root.append_child("testsuite");
  suite.append_attribute("name") = r.kernel.c_str();
  Counts counts;
  for (const GateResult& g : r.results) counts.add(g.verdict);
  counts.write(suite);
  pugi::xml_node props = suite.append_child("properties");
  add_property(props, "op", r.op);
  add_property(props, "profile", std::string(profile(r.contract.profile).name));
  add_property(props, "seed", fmt::format("{:#x}", r.seed));
  add_property(props, "generator_version", std::to_string(r.generator_version));
  add_property(props, "executor", r.executor);
  for (std::size_t i = 0; i < r.results.size(); ++i) add_testcase(suite, r, i);
}

}  // namespace

std::string render_junit(const std::vector<VerifyReport>& reports) {
  pugi::xml_document doc;
  pugi::xml_node decl = doc.append_child(pugi::node_declaration);
  decl.append_attribute("version") = "1.0";
  decl.append_attribute("encoding") = "UTF-8";
  pugi::xml_node root = doc.append_child("testsuites");
  root.append_attribute("name") = "kcv";
  Counts total;
  for (const VerifyReport& r : reports) {
    for (const GateResult& g : r.results) total.add(g.verdict);
  }
  total.write(root);
  for (const VerifyReport& r : reports) add_suite(root, r);
  std::ostringstream out;
  doc.save(out, "  ");
  return out.str();
}

}  // namespace kcv
