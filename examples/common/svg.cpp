#include "examples/common/svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "io/atomic_file.hpp"

namespace attn {

namespace {

constexpr double kFontSize = 12;
constexpr double kCharWidth = 0.6 * kFontSize;  // a rough average for sans-serif

// A coordinate with at most two decimals: "12.5", "3".
std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    std::string s = buf;
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
    return s == "-0" ? "0" : s;
}

// Width of a label in pixels, counting UTF-8 characters, not bytes.
double text_width(const std::string& s) {
    double n = 0;
    for (unsigned char c : s) n += (c & 0xc0) != 0x80;
    return n * kCharWidth;
}

std::string svg_open(double width, double height) {
    return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) + "\" height=\"" + num(height) +
           "\" viewBox=\"0 0 " + num(width) + " " + num(height) + "\" font-family=\"sans-serif\" font-size=\"" +
           num(kFontSize) + "\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
}

// <text> at (x, y); anchor is start, middle or end; extra attributes optional.
std::string text(double x, double y, const std::string& s, const char* anchor = "start",
                 const std::string& extra = "") {
    return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" text-anchor=\"" + anchor + "\"" +
           (extra.empty() ? "" : " " + extra) + ">" + xml_escape(s) + "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2, const char* stroke) {
    return "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) +
           "\" stroke=\"" + stroke + "\"/>\n";
}

std::string hex_color(double r, double g, double b) {
    auto byte = [](double v) { return static_cast<int>(std::lround(std::clamp(v, 0.0, 1.0) * 255)); };
    char buf[8];
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", byte(r), byte(g), byte(b));
    return buf;
}

// A tick label: as many decimals as the step needs ("0.25" for step 0.05).
std::string tick_label(double v, double step) {
    char buf[32];
    if (v != 0 && (std::abs(v) >= 1e6 || std::abs(v) < 1e-4)) {
        std::snprintf(buf, sizeof buf, "%g", v);
    } else {
        const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
        std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    }
    return buf;
}

// The categorical palette of matplotlib (tab10), one colour per series.
const char* const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// Ticks of a logarithmic axis covering [lo, hi] (both > 0): the powers of
// ten, plus 2× and 5× when the axis spans less than two decades.
std::vector<double> log_ticks(double lo, double hi) {
    int e0 = static_cast<int>(std::floor(std::log10(lo)));
    int e1 = static_cast<int>(std::ceil(std::log10(hi)));
    if (e1 == e0) ++e1;
    std::vector<double> ticks;
    for (int e = e0; e <= e1; ++e) {
        const double p = std::pow(10.0, e);
        ticks.push_back(p);
        if (e1 - e0 < 2 && e < e1) {
            ticks.push_back(2 * p);
            ticks.push_back(5 * p);
        }
    }
    return ticks;
}

}  // namespace

// ---- helpers -----------------------------------------------------------------------

std::string xml_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') out += '?';
                else out += c;
        }
    }
    return out;
}

std::vector<double> nice_ticks(double lo, double hi, int target, bool whole_numbers) {
    if (!std::isfinite(lo) || !std::isfinite(hi)) throw std::invalid_argument("nice_ticks: the range is not finite");
    if (hi < lo) std::swap(lo, hi);
    if (hi == lo) {  // a flat series: open a window around the value
        const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
        lo -= pad;
        hi += pad;
    }
    // step = 1, 2 or 5 × 10^k, the first of these at least (hi − lo) / target.
    const double rough = (hi - lo) / std::max(target, 1);
    const double magnitude = std::pow(10.0, std::floor(std::log10(rough)));
    const double residual = rough / magnitude;
    double step = magnitude * (residual <= 1 ? 1 : residual <= 2 ? 2 : residual <= 5 ? 5 : 10);
    if (whole_numbers) step = std::max(step, 1.0);  // 1, 2, 5, 10, ...: every tick a whole number
    const double first = std::floor(lo / step + 1e-9), last = std::ceil(hi / step - 1e-9);
    std::vector<double> ticks;
    for (double k = first; k <= last; ++k) ticks.push_back(std::abs(k) < 1e-9 ? 0.0 : k * step);
    return ticks;
}

std::string viridis(double t) {
    // matplotlib's viridis sampled at 9 points, interpolated linearly.
    static const double anchors[9][3] = {{68, 1, 84},    {71, 44, 122},  {59, 81, 139},
                                         {44, 113, 142}, {33, 144, 141}, {39, 173, 129},
                                         {92, 200, 99},  {170, 220, 50}, {253, 231, 37}};
    if (!std::isfinite(t)) return "#bbbbbb";
    const double x = std::clamp(t, 0.0, 1.0) * 8;
    const int i = std::min(static_cast<int>(x), 7);
    const double f = x - i;
    double rgb[3];
    for (int c = 0; c < 3; ++c) rgb[c] = ((1 - f) * anchors[i][c] + f * anchors[i + 1][c]) / 255;
    return hex_color(rgb[0], rgb[1], rgb[2]);
}

void write_svg(const std::string& path, const std::string& svg) {
    write_file_atomic(path, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + svg, "write_svg");
}

// ---- line chart ----------------------------------------------------------------------

namespace {

// A point of a curve as fractions of the plot area: (0, 0) is its bottom
// left corner, (1, 1) its top right. Where the legend goes decides the plot
// area's final height, so the curves are kept in these until then.
struct Point {
    double fx, fy;
};
using Piece = std::vector<Point>;  // an unbroken stretch of a curve

struct PlotArea {
    double left, right, top, bottom;  // pixels, y downwards
    double x(const Point& p) const { return left + p.fx * (right - left); }
    double y(const Point& p) const { return bottom - p.fy * (bottom - top); }
};

struct Box {
    double x0, y0, x1, y1;  // pixels, y downwards
};

// True when the segment a–b touches the box (a == b: the point is inside).
// The two miss when both ends lie beyond the same side of the box, or when
// the box's four corners lie strictly on one side of the line through a, b.
bool segment_touches(double ax, double ay, double bx, double by, const Box& box) {
    if (std::max(ax, bx) < box.x0 || std::min(ax, bx) > box.x1 || std::max(ay, by) < box.y0 ||
        std::min(ay, by) > box.y1)
        return false;
    const auto side = [&](double x, double y) { return (bx - ax) * (y - ay) - (by - ay) * (x - ax); };
    const double s[4] = {side(box.x0, box.y0), side(box.x1, box.y0), side(box.x0, box.y1), side(box.x1, box.y1)};
    const bool all_above = s[0] > 0 && s[1] > 0 && s[2] > 0 && s[3] > 0;
    const bool all_below = s[0] < 0 && s[1] < 0 && s[2] < 0 && s[3] < 0;
    return !all_above && !all_below;
}

// True when no curve passes through the box or within 3 pixels of it (the
// stroke's width, a lone point's radius).
bool clear_of_curves(const std::vector<std::vector<Piece>>& curves, const PlotArea& area, const Box& box) {
    const Box margin{box.x0 - 3, box.y0 - 3, box.x1 + 3, box.y1 + 3};
    for (const auto& pieces : curves)
        for (const Piece& piece : pieces)
            for (size_t i = 0; i < piece.size(); ++i) {
                const Point& a = piece[i];
                const Point& b = piece[std::min(i + 1, piece.size() - 1)];  // a lone point: a == b
                if (segment_touches(area.x(a), area.y(a), area.x(b), area.y(b), margin)) return false;
            }
    return true;
}

struct Pixel {
    double x, y;
};

// The legend: one entry per series, a short line in its colour and the name.
struct Legend {
    double width = 0, height = 0;
    std::vector<Pixel> entries;  // where each entry's line starts, on the name's baseline, from the box's corner
    Box box{};                   // where the legend is drawn
};

// The entries laid out in rows no wider than `max_width`, or one per row when
// `stacked`; the box is left for place_legend to set.
Legend legend_layout(const std::vector<Series>& series, double max_width, bool stacked) {
    constexpr double pad = 8, first_baseline = 16, row_height = 18, spacing = 14;
    Legend l;
    double x = pad, y = first_baseline;
    for (const Series& s : series) {
        const double w = 26 + text_width(s.name);  // a 20-pixel line, a gap, the name
        if (x > pad && (stacked || x + w + pad > max_width)) {  // a new row
            x = pad;
            y += row_height;
        }
        l.entries.push_back({x, y});
        l.width = std::max(l.width, x + w + pad);
        x += w + spacing;
    }
    l.height = y + 10;  // below the last baseline: the descenders and a margin
    return l;
}

// The legend must not hide any curve. It goes inside the plot, in the first
// corner (top right, top left, bottom right, bottom left) that no curve
// passes through; else in rows under the x label, and the plot gives up the
// room (area.bottom moves up). The order is fixed, so the same data always
// gives the same chart.
Legend place_legend(const std::vector<Series>& series, const std::vector<std::vector<Piece>>& curves, PlotArea& area,
                    double width, double height) {
    Legend legend = legend_layout(series, area.right - area.left, true);
    const bool fits = legend.width <= area.right - area.left - 16 && legend.height <= area.bottom - area.top - 16;
    const std::pair<bool, bool> corners[] = {{true, true}, {false, true}, {true, false}, {false, false}};
    for (const auto& [at_right, at_top] : corners) {
        if (!fits) break;
        const double x0 = at_right ? area.right - 8 - legend.width : area.left + 8;
        const double y0 = at_top ? area.top + 8 : area.bottom - 8 - legend.height;
        legend.box = {x0, y0, x0 + legend.width, y0 + legend.height};
        if (clear_of_curves(curves, area, legend.box)) return legend;
    }
    legend = legend_layout(series, width - 16, false);
    area.bottom -= legend.height + 6;
    const double x0 = std::max(8.0, (width - legend.width) / 2);
    legend.box = {x0, height - 4 - legend.height, x0 + legend.width, height - 4};
    return legend;
}

std::string legend_svg(const std::vector<Series>& series, const Legend& legend) {
    const Box& b = legend.box;
    std::string svg = "<rect class=\"legend\" x=\"" + num(b.x0) + "\" y=\"" + num(b.y0) + "\" width=\"" +
                      num(b.x1 - b.x0) + "\" height=\"" + num(b.y1 - b.y0) +
                      "\" fill=\"white\" fill-opacity=\"0.85\" stroke=\"#ccc\"/>\n";
    for (size_t k = 0; k < series.size(); ++k) {
        const double x = b.x0 + legend.entries[k].x, y = b.y0 + legend.entries[k].y;
        svg += "<line x1=\"" + num(x) + "\" y1=\"" + num(y - 4) + "\" x2=\"" + num(x + 20) + "\" y2=\"" + num(y - 4) +
               "\" stroke=\"" + kPalette[k % 10] + "\" stroke-width=\"2\"/>\n";
        svg += text(x + 26, y, series[k].name);
    }
    return svg;
}

}  // namespace

std::string line_chart_svg(const std::vector<Series>& series, const LineChartOptions& options) {
    const auto usable = [&](double x, double y) {
        return std::isfinite(x) && std::isfinite(y) && (!options.log_y || y > 0);
    };
    // The data range over every usable point, and whether every x is a whole
    // number (an epoch or step count: then no tick may fall between two).
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    bool whole_x = true;
    for (const Series& s : series) {
        if (s.x.size() != s.y.size())
            throw std::invalid_argument("line_chart_svg: series \"" + s.name + "\" has " +
                                        std::to_string(s.x.size()) + " x values but " +
                                        std::to_string(s.y.size()) + " y values");
        for (size_t i = 0; i < s.x.size(); ++i) {
            if (!usable(s.x[i], s.y[i])) continue;
            xmin = std::min(xmin, s.x[i]);
            xmax = std::max(xmax, s.x[i]);
            ymin = std::min(ymin, s.y[i]);
            ymax = std::max(ymax, s.y[i]);
            whole_x = whole_x && s.x[i] == std::floor(s.x[i]);
        }
    }
    const bool empty = !(xmin <= xmax);
    if (empty) {  // axes from 0 to 1 (1 to 10 on a log scale), and a note
        xmin = 0;
        xmax = 1;
        ymin = options.log_y ? 1 : 0;
        ymax = options.log_y ? 10 : 1;
        whole_x = false;
    }

    const std::vector<double> xticks = nice_ticks(xmin, xmax, 6, whole_x);
    const std::vector<double> yticks = options.log_y ? log_ticks(ymin, ymax) : nice_ticks(ymin, ymax, 5);
    const double x_lo = xticks.front(), x_hi = xticks.back();
    const double y_lo = yticks.front(), y_hi = yticks.back();
    const auto fx = [&](double x) { return (x - x_lo) / (x_hi - x_lo); };
    const auto fy = [&](double y) {
        return options.log_y ? (std::log10(y) - std::log10(y_lo)) / (std::log10(y_hi) - std::log10(y_lo))
                             : (y - y_lo) / (y_hi - y_lo);
    };
    // Each series as unbroken pieces: a skipped point ends a piece.
    std::vector<std::vector<Piece>> curves(series.size());
    for (size_t k = 0; k < series.size(); ++k) {
        bool pen_down = false;
        for (size_t i = 0; i < series[k].x.size(); ++i) {
            const double x = series[k].x[i], y = series[k].y[i];
            if (!usable(x, y)) {
                pen_down = false;
                continue;
            }
            if (!pen_down) curves[k].emplace_back();
            curves[k].back().push_back({fx(x), fy(y)});
            pen_down = true;
        }
    }

    // The plot area, then the legend (which may take room from its bottom).
    const double width = options.width, height = options.height;
    PlotArea area{.left = 70, .right = width - 20, .top = options.title.empty() ? 20.0 : 40.0, .bottom = height - 50};
    const Legend legend = series.empty() ? Legend{} : place_legend(series, curves, area, width, height);
    const double left = area.left, right = area.right, top = area.top, bottom = area.bottom;

    std::string svg = svg_open(width, height);
    if (!options.title.empty()) svg += text(width / 2, 24, options.title, "middle", "font-size=\"15\"");

    // Grid lines and tick labels.
    const double xstep = xticks.size() > 1 ? xticks[1] - xticks[0] : 1;
    for (double x : xticks) {
        const double at = area.x({fx(x), 0});
        svg += line(at, top, at, bottom, "#e5e5e5");
        svg += text(at, bottom + 16, tick_label(x, xstep), "middle", "class=\"xtick\"");
    }
    const double ystep = yticks.size() > 1 ? yticks[1] - yticks[0] : 1;
    for (double y : yticks) {
        const double at = area.y({0, fy(y)});
        svg += line(left, at, right, at, "#e5e5e5");
        char buf[32];
        if (options.log_y) std::snprintf(buf, sizeof buf, "%g", y);
        svg += text(left - 6, at + 4, options.log_y ? std::string(buf) : tick_label(y, ystep), "end",
                    "class=\"ytick\"");
    }
    svg += "<rect class=\"plot\" x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" + num(right - left) +
           "\" height=\"" + num(bottom - top) + "\" fill=\"none\" stroke=\"#444\"/>\n";
    if (!options.x_label.empty())
        svg += text((left + right) / 2, bottom + 38, options.x_label, "middle", "class=\"xlabel\"");
    if (!options.y_label.empty()) {
        const double cx = 16, cy = (top + bottom) / 2;
        svg += text(cx, cy, options.y_label, "middle",
                    "class=\"ylabel\" transform=\"rotate(-90 " + num(cx) + " " + num(cy) + ")\"");
    }
    if (empty) svg += text((left + right) / 2, (top + bottom) / 2, "no data", "middle", "fill=\"#888\"");

    // One path per series, "M" starting each piece. A lone point would be
    // invisible as a path: a series of one point is a dot. A series of a few
    // points (two epochs, say) also gets a dot at each: a straight line
    // between two measurements would otherwise look like a measured trend.
    constexpr size_t kMarkedPoints = 12;
    for (size_t k = 0; k < series.size(); ++k) {
        const char* color = kPalette[k % 10];
        std::string d;
        size_t points = 0;
        for (const Piece& piece : curves[k])
            for (size_t i = 0; i < piece.size(); ++i, ++points)
                d += (i > 0 ? " L" : d.empty() ? "M" : " M") + num(area.x(piece[i])) + " " + num(area.y(piece[i]));
        if (points > 1) {
            svg += "<path class=\"series\" d=\"" + d + "\" fill=\"none\" stroke=\"" + color + "\" stroke-width=\"2\"/>\n";
            if (points <= kMarkedPoints)
                for (const Piece& piece : curves[k])
                    for (const auto& p : piece)
                        svg += "<circle class=\"point\" cx=\"" + num(area.x(p)) + "\" cy=\"" + num(area.y(p)) +
                               "\" r=\"3\" fill=\"" + color + "\"/>\n";
        } else if (points == 1)
            svg += "<circle class=\"series\" cx=\"" + num(area.x(curves[k][0][0])) + "\" cy=\"" +
                   num(area.y(curves[k][0][0])) + "\" r=\"3\" fill=\"" + color + "\"/>\n";
    }
    if (!series.empty()) svg += legend_svg(series, legend);
    return svg + "</svg>\n";
}

// ---- heatmap ---------------------------------------------------------------------------

std::string heatmap_svg(const Tensor& values, const std::vector<std::string>& row_labels,
                        const std::vector<std::string>& col_labels, const HeatmapOptions& options) {
    if (!values.defined() || values.rank() != 2)
        throw std::invalid_argument("heatmap_svg: values must be a 2-D tensor (rows×cols), got " +
                                    (values.defined() ? "shape " + values.shape().str() : std::string("undefined")));
    const int64_t rows = values.size(0), cols = values.size(1);
    if (!row_labels.empty() && static_cast<int64_t>(row_labels.size()) != rows)
        throw std::invalid_argument("heatmap_svg: " + std::to_string(row_labels.size()) + " row labels for " +
                                    std::to_string(rows) + " rows");
    if (!col_labels.empty() && static_cast<int64_t>(col_labels.size()) != cols)
        throw std::invalid_argument("heatmap_svg: " + std::to_string(col_labels.size()) + " column labels for " +
                                    std::to_string(cols) + " columns");
    const auto row_name = [&](int64_t r) { return row_labels.empty() ? std::to_string(r) : row_labels[r]; };
    const auto col_name = [&](int64_t c) { return col_labels.empty() ? std::to_string(c) : col_labels[c]; };

    // The colour scale's range.
    double lo = options.vmin, hi = options.vmax;
    if (options.auto_range) {
        lo = INFINITY;
        hi = -INFINITY;
        for (int64_t i = 0; i < values.numel(); ++i) {
            if (!std::isfinite(values[i])) continue;
            lo = std::min<double>(lo, values[i]);
            hi = std::max<double>(hi, values[i]);
        }
        if (!(lo <= hi)) {  // no finite value at all
            lo = 0;
            hi = 1;
        }
    }
    if (!(hi > lo)) hi = lo + 1;  // a constant map: every cell at the bottom of the scale
    const auto scaled = [&](double v) { return (v - lo) / (hi - lo); };

    // Layout: title, rotated column labels, then the grid with the row labels
    // on its left and the legend bar on its right; the x label underneath.
    const double cell = options.cell_size;
    double row_label_w = 0, col_label_w = 0;
    for (int64_t r = 0; r < rows; ++r) row_label_w = std::max(row_label_w, text_width(row_name(r)));
    for (int64_t c = 0; c < cols; ++c) col_label_w = std::max(col_label_w, text_width(col_name(c)));
    const double left = (options.y_label.empty() ? 8 : 28) + row_label_w + 8;
    const double top = (options.title.empty() ? 8 : 32) + col_label_w * 0.71 + 14;
    const double grid_w = cell * cols, grid_h = cell * rows;
    const double legend_x = left + grid_w + 16, legend_h = std::max(grid_h, 100.0);
    const double width = legend_x + 14 + 60, height = top + legend_h + (options.x_label.empty() ? 12 : 36);

    std::string svg = svg_open(width, height);
    if (!options.title.empty()) svg += text(width / 2, 22, options.title, "middle", "font-size=\"15\"");
    for (int64_t c = 0; c < cols; ++c) {  // column labels, rotated 45° to fit long tokens
        const double x = left + cell * (c + 0.5) + 4, y = top - 6;
        svg += text(x, y, col_name(c), "start", "transform=\"rotate(-45 " + num(x) + " " + num(y) + ")\"");
    }
    for (int64_t r = 0; r < rows; ++r) svg += text(left - 8, top + cell * (r + 0.5) + 4, row_name(r), "end");
    if (!options.y_label.empty()) {
        const double cx = 14, cy = top + grid_h / 2;
        svg += text(cx, cy, options.y_label, "middle", "transform=\"rotate(-90 " + num(cx) + " " + num(cy) + ")\"");
    }
    if (!options.x_label.empty()) svg += text(left + grid_w / 2, top + legend_h + 26, options.x_label, "middle");

    // One rect per cell, with a tooltip.
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
            const double v = values[r * cols + c];
            char value_text[32];
            std::snprintf(value_text, sizeof value_text, "%.3g", v);
            svg += "<rect class=\"cell\" x=\"" + num(left + cell * c) + "\" y=\"" + num(top + cell * r) +
                   "\" width=\"" + num(cell) + "\" height=\"" + num(cell) + "\" fill=\"" + viridis(scaled(v)) +
                   "\"><title>" + xml_escape(row_name(r) + " / " + col_name(c) + ": " + value_text) +
                   "</title></rect>\n";
            if (options.show_values) {
                std::snprintf(value_text, sizeof value_text, "%.2f", v);
                const char* ink = scaled(v) > 0.6 ? "black" : "white";  // readable on the cell's colour
                svg += text(left + cell * (c + 0.5), top + cell * (r + 0.5) + 3, value_text, "middle",
                            "font-size=\"" + num(cell * 0.32) + "\" fill=\"" + ink + "\"");
            }
        }
    }

    // The legend: a vertical colour bar, hi at the top, lo at the bottom.
    const int slices = 50;
    svg += "<g shape-rendering=\"crispEdges\">\n";  // no seams between the slices
    for (int k = 0; k < slices; ++k) {
        const double t = 1 - (k + 0.5) / slices;
        svg += "<rect class=\"legend\" x=\"" + num(legend_x) + "\" y=\"" + num(top + legend_h * k / slices) +
               "\" width=\"14\" height=\"" + num(legend_h / slices + 0.5) + "\" fill=\"" + viridis(t) + "\"/>\n";
    }
    svg += "</g>\n";
    char buf[32];
    for (double t : {0.0, 0.5, 1.0}) {
        std::snprintf(buf, sizeof buf, "%.3g", lo + t * (hi - lo));
        svg += text(legend_x + 20, top + legend_h * (1 - t) + 4, buf);
    }
    return svg + "</svg>\n";
}

// ---- attention over an image -------------------------------------------------------------

std::string attention_overlay_svg(const Tensor& image, const Tensor& weights, const OverlayOptions& options) {
    if (!image.defined() || image.rank() != 2)
        throw std::invalid_argument("attention_overlay_svg: image must be a 2-D tensor (H×W)");
    if (!weights.defined() || weights.rank() != 2 || weights.numel() == 0)
        throw std::invalid_argument("attention_overlay_svg: weights must be a non-empty 2-D tensor (h×w)");
    const int64_t H = image.size(0), W = image.size(1), h = weights.size(0), w = weights.size(1);

    double peak = 0;
    for (int64_t i = 0; i < weights.numel(); ++i)
        if (std::isfinite(weights[i])) peak = std::max<double>(peak, weights[i]);

    // Bilinear upsampling with PyTorch's align_corners=False convention:
    // output pixel i samples the input at (i + 0.5) · in / out − 0.5.
    const auto sample = [&](int64_t y, int64_t x) {
        const double sy = std::clamp((y + 0.5) * h / H - 0.5, 0.0, h - 1.0);
        const double sx = std::clamp((x + 0.5) * w / W - 0.5, 0.0, w - 1.0);
        const int64_t y0 = static_cast<int64_t>(sy), x0 = static_cast<int64_t>(sx);
        const int64_t y1 = std::min(y0 + 1, h - 1), x1 = std::min(x0 + 1, w - 1);
        const double fy = sy - y0, fx = sx - x0;
        const auto at = [&](int64_t r, int64_t c) {
            const double v = weights[r * w + c];
            return std::isfinite(v) ? v : 0.0;
        };
        return (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) + fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1));
    };

    const double ps = options.pixel_size > 0 ? options.pixel_size
                                             : std::max(1.0, std::round(160.0 / std::max<int64_t>({H, W, 1})));
    const double title_h = options.title.empty() ? 0 : 22;
    std::string svg = svg_open(std::max(W * ps, text_width(options.title)), H * ps + title_h);
    if (!options.title.empty()) svg += text(W * ps / 2, 16, options.title, "middle");
    svg += "<g shape-rendering=\"crispEdges\">\n";
    for (int64_t y = 0; y < H; ++y) {
        for (int64_t x = 0; x < W; ++x) {
            const double v = image[y * W + x];
            const double gray = std::isfinite(v) ? std::clamp(v, 0.0, 1.0) : 0.0;
            const double a = peak > 0 ? options.opacity * sample(y, x) / peak : 0;
            // Blend the gray pixel towards orange (1, 0.55, 0) by a.
            const std::string color = hex_color((1 - a) * gray + a, (1 - a) * gray + a * 0.55, (1 - a) * gray);
            svg += "<rect x=\"" + num(x * ps) + "\" y=\"" + num(title_h + y * ps) + "\" width=\"" + num(ps) +
                   "\" height=\"" + num(ps) + "\" fill=\"" + color + "\"/>\n";
        }
    }
    return svg + "</g>\n</svg>\n";
}

std::string numbered_path(const std::string& path, size_t index, size_t count) {
    if (count <= 1) return path;
    const size_t slash = path.find_last_of('/');
    size_t dot = path.find_last_of('.');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) dot = path.size();
    return path.substr(0, dot) + "-" + std::to_string(index + 1) + path.substr(dot);
}

}  // namespace attn
