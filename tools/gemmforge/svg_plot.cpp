// SVG bar chart of speed ratios.
#include "svg_plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gemmforge::cli {
namespace {

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string ratio_chart_svg(const std::string& title, const std::vector<RatioBar>& bars, double geomean) {
  constexpr int kLeft = 60, kTop = 40, kPlotHeight = 300, kBarWidth = 44, kGap = 16, kBottom = 120;
  const int width = kLeft + static_cast<int>(bars.size()) * (kBarWidth + kGap) + 40;
  const int height = kTop + kPlotHeight + kBottom;
  double top = 1.2;
  for (const RatioBar& bar : bars) top = std::max(top, bar.ratio * 1.1);
  top = std::ceil(top * 2) / 2;  // axis up to a multiple of 0.5
  auto y = [&](double value) { return kTop + kPlotHeight * (1.0 - value / top); };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"22\" font-size=\"15\">{}</text>\n",
      width, height, kLeft, escape(title));
  for (double tick = 0; tick <= top + 1e-9; tick += 0.5) {
    svg += fmt::format(
        "<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:.1f}x</text>\n",
        kLeft, width - 20, y(tick), y(tick), kLeft - 6, y(tick) + 4, tick);
  }
  for (size_t i = 0; i < bars.size(); ++i) {
    const int x = kLeft + kGap / 2 + static_cast<int>(i) * (kBarWidth + kGap);
    const double ratio = std::max(0.0, bars[i].ratio);
    const char* colour = ratio >= 1.0 ? "#2e7d32" : ratio >= 0.85 ? "#f9a825" : "#c62828";
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" fill=\"{}\"/>"
        "<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"middle\">{:.2f}</text>\n",
        x, y(ratio), kBarWidth, y(0) - y(ratio), colour, x + kBarWidth / 2, y(ratio) - 4, ratio);
    svg += fmt::format("<text transform=\"translate({},{}) rotate(-45)\" text-anchor=\"end\">{}</text>\n",
                       x + kBarWidth / 2, kTop + kPlotHeight + 14, escape(bars[i].label));
  }
  svg += fmt::format(
      "<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"black\" stroke-dasharray=\"6,4\"/>"
      "<text x=\"{}\" y=\"{:.1f}\">cuBLAS</text>\n",
      kLeft, width - 20, y(1.0), y(1.0), width - 70, y(1.0) - 4);
  svg += fmt::format(
      "<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#1565c0\"/>"
      "<text x=\"{}\" y=\"{:.1f}\" fill=\"#1565c0\">geomean {:.3f}</text>\n</svg>\n",
      kLeft, width - 20, y(geomean), y(geomean), kLeft + 4, y(geomean) - 4, geomean);
  return svg;
}

}  // namespace gemmforge::cli
