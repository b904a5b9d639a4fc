// Reading back a line chart of examples/common/svg.hpp, for the tests of the
// charts and of the trainers' charts: where the plot, the legend and the
// curves are, the tick labels, the axis labels. The checks below compute on
// the SVG text alone, sharing no code with the chart, so a mistake in its
// placement arithmetic cannot hide itself.
#pragma once

#include <doctest/doctest.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace attn::testing {

struct ChartBox {
    double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    bool found = false;
    bool contains(double x, double y) const { return x > x0 && x < x1 && y > y0 && y < y1; }
};

struct ChartPoint {
    double x, y;
};

struct ChartParts {
    ChartBox plot, legend;
    std::vector<std::vector<ChartPoint>> pieces;  // each unbroken stretch of each curve, in pixels
    std::vector<std::string> xticks, yticks;      // the tick labels as printed
    std::string x_label, y_label;                 // "" when absent
};

// The value of attribute `name` in the tag that starts at `at`.
inline double chart_attribute(const std::string& svg, size_t at, const std::string& name) {
    const size_t end = svg.find('>', at);
    const size_t p = svg.find(" " + name + "=\"", at);
    REQUIRE_MESSAGE((p != std::string::npos && p < end), "no attribute " << name << " in " << svg.substr(at, end - at));
    return std::strtod(svg.c_str() + p + name.size() + 3, nullptr);
}

inline ChartBox chart_rect(const std::string& svg, size_t at) {
    ChartBox b;
    b.x0 = chart_attribute(svg, at, "x");
    b.y0 = chart_attribute(svg, at, "y");
    b.x1 = b.x0 + chart_attribute(svg, at, "width");
    b.y1 = b.y0 + chart_attribute(svg, at, "height");
    b.found = true;
    return b;
}

// The text of every <text class="CLASS" ...>...</text>.
inline std::vector<std::string> chart_texts(const std::string& svg, const std::string& cls) {
    std::vector<std::string> out;
    const std::string key = "class=\"" + cls + "\"";
    for (size_t at = svg.find(key); at != std::string::npos; at = svg.find(key, at + 1)) {
        const size_t open = svg.rfind('<', at);
        if (svg.compare(open, 5, "<text") != 0) continue;
        const size_t start = svg.find('>', at) + 1;
        out.push_back(svg.substr(start, svg.find("</text>", start) - start));
    }
    return out;
}

inline ChartParts parse_chart(const std::string& svg) {
    ChartParts c;
    if (size_t at = svg.find("<rect class=\"plot\""); at != std::string::npos) c.plot = chart_rect(svg, at);
    if (size_t at = svg.find("<rect class=\"legend\""); at != std::string::npos) c.legend = chart_rect(svg, at);
    // Curves: <path class="series" d="M x y L x y ... M x y ..."/> and, for a
    // series of one point, <circle class="series" cx=".." cy=".."/>.
    for (size_t at = svg.find("<path class=\"series\""); at != std::string::npos;
         at = svg.find("<path class=\"series\"", at + 1)) {
        const size_t d = svg.find(" d=\"", at) + 4;
        const char* p = svg.c_str() + d;
        while (*p != '"') {
            const char command = *p++;
            if (command == 'M') c.pieces.emplace_back();
            char* end = nullptr;
            const double x = std::strtod(p, &end);
            const double y = std::strtod(end, &end);
            c.pieces.back().push_back({x, y});
            p = end;
            while (*p == ' ') ++p;
        }
    }
    for (size_t at = svg.find("<circle class=\"series\""); at != std::string::npos;
         at = svg.find("<circle class=\"series\"", at + 1))
        c.pieces.push_back({{chart_attribute(svg, at, "cx"), chart_attribute(svg, at, "cy")}});
    c.xticks = chart_texts(svg, "xtick");
    c.yticks = chart_texts(svg, "ytick");
    const std::vector<std::string> x_labels = chart_texts(svg, "xlabel"), y_labels = chart_texts(svg, "ylabel");
    c.x_label = x_labels.empty() ? "" : x_labels[0];
    c.y_label = y_labels.empty() ? "" : y_labels[0];
    return c;
}

// "" when no point of any curve, nor any point along a segment between two
// (sampled every half pixel), lies inside the legend's box; else the first
// that does.
inline std::string legend_covers_curve(const ChartParts& c) {
    char where[200];
    for (size_t k = 0; k < c.pieces.size(); ++k) {
        const auto& piece = c.pieces[k];
        for (size_t i = 0; i < piece.size(); ++i) {
            const ChartPoint a = piece[i], b = i + 1 < piece.size() ? piece[i + 1] : piece[i];
            const double length = std::abs(b.x - a.x) + std::abs(b.y - a.y);
            const int samples = 1 + static_cast<int>(2 * length);
            for (int s = 0; s <= samples; ++s) {
                const double t = static_cast<double>(s) / samples;
                const double x = a.x + t * (b.x - a.x), y = a.y + t * (b.y - a.y);
                if (!c.legend.contains(x, y)) continue;
                std::snprintf(where, sizeof where,
                              "piece %zu, %s (%.1f, %.1f) lies inside the legend box [%.1f, %.1f] x [%.1f, %.1f]", k,
                              s == 0 ? "the data point" : "the line to the next point at", x, y, c.legend.x0,
                              c.legend.x1, c.legend.y0, c.legend.y1);
                return where;
            }
        }
    }
    return "";
}

// "1 | 2 | 3": tick labels or legend names on one line, for a failure to print.
inline std::string joined(const std::vector<std::string>& items) {
    std::string out;
    for (const std::string& item : items) out += (out.empty() ? "" : " | ") + item;
    return out;
}

// True when the label reads as a whole number ("12", "-3"), not "1.5".
inline bool whole_number_label(const std::string& label) {
    if (label.empty()) return false;
    for (size_t i = 0; i < label.size(); ++i)
        if (!(std::isdigit(static_cast<unsigned char>(label[i])) || (i == 0 && label[i] == '-'))) return false;
    return true;
}

}  // namespace attn::testing
