// A bar chart of gemmforge's speed relative to cuBLAS per problem, written as standalone SVG.
#pragma once

#include <string>
#include <vector>

namespace gemmforge::cli {

struct RatioBar {
  std::string label;  ///< e.g. "4096x4096x4096"
  double ratio = 0;   ///< gemmforge speed / cuBLAS speed
};

/// SVG text: one bar per problem, a reference line at 1.0 (parity with cuBLAS), the geometric mean.
std::string ratio_chart_svg(const std::string& title, const std::vector<RatioBar>& bars, double geomean);

}  // namespace gemmforge::cli
