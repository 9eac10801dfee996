// File: src/report/svg.hpp
// A minimal SVG writer for the report's figures: an element list with coordinates rounded to
// 0.1 px, every text and attribute value escaped (kernel ids and corpus names are data and may
// contain '<' or '&'). Figures are plain strings, so tests can parse them as XML and the HTML
// page can inline them without any script.
#pragma once

#include <string>
#include <string_view>

namespace kcv::audit_report::svg {

/// Escapes &, <, >, " and ' for XML text and attribute values.
std::string escape(std::string_view text);

/// ` name="value"` with the value escaped, for the `extra` arguments below.
std::string attr(std::string_view name, std::string_view value);

struct Style {
  std::string fill = "none";
  std::string stroke;  // empty: none
  double stroke_width = 1;
  std::string dash;  // stroke-dasharray, empty: solid
};

class Canvas {
 public:
  Canvas(double width, double height, std::string_view title);
  void rect(double x, double y, double w, double h, const Style& s, std::string_view extra = {});
  void line(double x1, double y1, double x2, double y2, const Style& s,
            std::string_view extra = {});
  /// anchor: start | middle | end.
  void text(double x, double y, std::string_view content, std::string_view anchor = "start",
            double size = 12, std::string_view extra = {});
  /// Wraps the elements in <svg> with a <title>.
  std::string finish() const;

 private:
  double width_, height_;
  std::string title_;
  std::string body_;
};

}  // namespace kcv::audit_report::svg
