// SVG charts, written as text without any library: loss curves, attention
// heatmaps, and attention over an image. Each function returns a complete
// <svg> element, ready to be saved as a file (write_svg) or inlined in the
// HTML report (examples/common/report.hpp). All text is XML-escaped.
//
//   std::string chart = line_chart_svg({{"train", epochs, train_loss},
//                                       {"valid", epochs, valid_loss}},
//                                      {.title = "loss", .x_label = "epoch", .log_y = true});
//   std::string map = heatmap_svg(weights /* n×m */, target_tokens, source_tokens,
//                                 {.x_label = "source", .y_label = "target"});
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tensor/tensor.hpp"

namespace attn {

// ---- line chart ----------------------------------------------------------------

// One named curve; x and y have the same length. Points with a non-finite
// coordinate (or y <= 0 on a log scale) are skipped and break the line.
struct Series {
    std::string name{};
    std::vector<double> x{};
    std::vector<double> y{};
};

// Options are aggregates for designated initializers, {.title = "loss"};
// every member has a default ({} included, which also keeps g++'s
// -Wmissing-field-initializers quiet when leading members are left out).
struct LineChartOptions {
    std::string title{};
    std::string x_label{};
    std::string y_label{};
    bool log_y = false;  // logarithmic y axis (losses spanning decades)
    int width = 640;
    int height = 400;
};

// Axes with "nice" tick values (1, 2 or 5 × 10^k), grid lines, axis labels,
// and a legend naming each series in its colour. When every x is a whole
// number (epochs, steps) so is every x tick. The legend never hides a curve:
// it goes in the first corner of the plot (top right, top left, bottom
// right, bottom left) that no curve passes through, else below the plot.
// Elements carry classes for tests and styling: "plot" (the plot area's
// frame), "series" (a curve's path or dot), "legend" (the legend's box),
// "xtick", "ytick", "xlabel", "ylabel".
std::string line_chart_svg(const std::vector<Series>& series, const LineChartOptions& options = {});

// ---- heatmap -------------------------------------------------------------------

struct HeatmapOptions {
    std::string title{};
    std::string x_label{};  // below the grid, naming the columns, e.g. "source tokens"
    std::string y_label{};  // beside the row labels, e.g. "target tokens"
    // The values mapped to the two ends of the colour scale. With auto_range
    // they are the minimum and maximum of the data; otherwise [vmin, vmax]
    // (default [0, 1], the range of attention weights), values outside clamped.
    bool auto_range = false;
    double vmin = 0;
    double vmax = 1;
    bool show_values = false;  // print each value in its cell
    int cell_size = 28;        // pixels
};

// A rows×cols grid of coloured cells (the viridis scale) with the row labels
// on the left, the column labels on top, and a colour legend bar on the
// right. `values` is a 2-D tensor; the label vectors must be empty (then the
// indices are shown) or have one entry per row / column. Each cell is one
// <rect class="cell"> with a <title> tooltip giving its labels and value.
std::string heatmap_svg(const Tensor& values, const std::vector<std::string>& row_labels,
                        const std::vector<std::string>& col_labels, const HeatmapOptions& options = {});

// ---- attention over an image ---------------------------------------------------

struct OverlayOptions {
    std::string title{};    // e.g. the word generated while attending
    int pixel_size = 0;     // screen pixels per image pixel; 0: about 160 px wide in all
    double opacity = 0.7;   // of the highlight where the weight is largest
};

// A grayscale image (H×W tensor, values in [0, 1]) with attention weights
// (an h×w grid, e.g. the 7×7 feature-map locations of a captioner) upsampled
// bilinearly to H×W and blended on top in orange: a pixel's highlight is
// opacity · weight / max(weight). One <rect> per pixel.
std::string attention_overlay_svg(const Tensor& image, const Tensor& weights, const OverlayOptions& options = {});

// ---- helpers -------------------------------------------------------------------

// Escapes & < > " ' for XML text and attributes; control characters that
// XML 1.0 forbids become '?'.
std::string xml_escape(std::string_view text);

// Tick values covering [lo, hi]: multiples of a step of 1, 2 or 5 × 10^k
// chosen so that there are about `target` of them; the first tick is <= lo
// and the last >= hi (the axis is extended to them). With `whole_numbers`
// the step is at least 1, for counts such as epochs (no tick at 1.5).
std::vector<double> nice_ticks(double lo, double hi, int target = 5, bool whole_numbers = false);

// The viridis colour map (perceptually uniform, readable in grayscale) at
// t in [0, 1], as "#rrggbb".
std::string viridis(double t);

// Writes an SVG document (with an XML declaration) to `path`, atomically.
void write_svg(const std::string& path, const std::string& svg);
// The file for picture `index` of `count`: `path` itself when there is one,
// else "-1", "-2", ... before its extension (a.svg → a-1.svg, a-2.svg).
std::string numbered_path(const std::string& path, size_t index, size_t count);

}  // namespace attn
