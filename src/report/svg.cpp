// File: src/report/svg.cpp
// The SVG element writer (see svg.hpp). Numbers are written with one decimal: enough for a
// screen, and stable text for tests and diffs.
#include "report/svg.hpp"

#include <fmt/format.h>

namespace kcv::audit_report::svg {
namespace {

std::string style_attrs(const Style& s) {
  std::string out = attr("fill", s.fill);
  if (!s.stroke.empty()) {
    out += attr("stroke", s.stroke) + fmt::format(" stroke-width=\"{:.1f}\"", s.stroke_width);
    if (!s.dash.empty()) out += attr("stroke-dasharray", s.dash);
  }
  return out;
}

}  // namespace

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        // Control characters other than tab/newline are not allowed in XML 1.0.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r')
          out += ' ';
        else
          out += c;
    }
  }
  return out;
}

std::string attr(std::string_view name, std::string_view value) {
  return fmt::format(" {}=\"{}\"", name, escape(value));
}

Canvas::Canvas(double width, double height, std::string_view title)
    : width_(width), height_(height), title_(title) {}

void Canvas::rect(double x, double y, double w, double h, const Style& s, std::string_view extra) {
  body_ += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"{}{}/>\n",
                       x, y, w, h, style_attrs(s), extra);
}

void Canvas::line(double x1, double y1, double x2, double y2, const Style& s,
                  std::string_view extra) {
  body_ += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"{}{}/>\n", x1,
                       y1, x2, y2, style_attrs(s), extra);
}

void Canvas::text(double x, double y, std::string_view content, std::string_view anchor,
                  double size, std::string_view extra) {
  body_ += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\" font-size=\"{:.1f}\"{}>{}</text>\n", x, y,
      anchor, size, extra, escape(content));
}

std::string Canvas::finish() const {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {0:.0f} {1:.0f}\" width=\"{0:.0f}\" "
      "height=\"{1:.0f}\" role=\"img\" "
      "font-family=\"sans-serif\">\n<title>{2}</title>\n{3}</svg>\n",
      width_, height_, escape(title_), body_);
}

}  // namespace kcv::audit_report::svg
