#include "examples/common/terminal_view.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "io/json.hpp"

namespace attn {

bool stdout_is_terminal() { return isatty(STDOUT_FILENO) != 0; }

std::vector<std::string> arguments_or_stdin_lines(const std::vector<std::string>& arguments) {
    if (!arguments.empty()) return arguments;
    return input_lines(std::cin);
}

std::vector<std::string> input_lines(std::istream& in, const std::string& what) {
    std::vector<std::string> lines;
    std::string line;
    int64_t number = 1;
    const auto finish = [&] {
        if (number == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty()) lines.push_back(line);
        line.clear();
        ++number;
    };
    // A character at a time, so that a line without end is refused at
    // kMaxInputLine bytes rather than read whole (std::getline would).
    for (int c; (c = in.get()) != std::char_traits<char>::eof();) {
        if (c == '\n') {
            finish();
        } else if (line.size() == kMaxInputLine) {
            throw std::runtime_error(what + ", line " + std::to_string(number) + ": longer than " +
                                     std::to_string(kMaxInputLine) + " bytes (one input per line)");
        } else {
            line += static_cast<char>(c);
        }
    }
    if (!line.empty()) finish();
    return lines;
}

bool colour_terminal() {
    const char* term = std::getenv("TERM");
    const char* no_colour = std::getenv("NO_COLOR");
    return stdout_is_terminal() && !(term && std::strcmp(term, "dumb") == 0) && !(no_colour && *no_colour);
}

int block_level(double w) {
    if (!(w >= 0.1)) return 0;  // NaN too
    return std::min(4, 1 + static_cast<int>((w - 0.1) / 0.225));
}

namespace {

const char* const blocks[] = {" ", "░", "▒", "▓", "█"};

// One cell of two characters for a weight in [0, 1].
std::string cell(double w, const TextViewOptions& o) {
    if (!o.colour) return std::string(blocks[block_level(w)]) + blocks[block_level(w)];
    // 24 greys from 232 (near black) to 255 (near white)
    const int grey = 232 + static_cast<int>(std::lround(std::clamp(std::isfinite(w) ? w : 0.0, 0.0, 1.0) * 23));
    return "\033[48;5;" + std::to_string(grey) + "m  \033[0m";
}

// The UTF-8 characters of a label (a broken byte counts as one character).
std::vector<std::string> characters_of(const std::string& s) {
    std::vector<std::string> out;
    for (size_t at = 0; at < s.size();) {
        const size_t n = std::max<size_t>(1, utf8_char_length(s, at));
        out.push_back(s.substr(at, n));
        at += n;
    }
    return out;
}

size_t width_of(const std::string& s) { return characters_of(s).size(); }

std::string pad_right(const std::string& s, size_t width) {
    const size_t w = width_of(s);
    return s + std::string(w < width ? width - w : 0, ' ');
}

void check_labels(const char* what, size_t labels, int64_t count) {
    if (labels != 0 && static_cast<int64_t>(labels) != count)
        throw std::invalid_argument(std::string("heatmap_text: ") + what + ": " + std::to_string(labels) +
                                    " labels for " + std::to_string(count) + " weights");
}

}  // namespace

std::string heatmap_text(const Tensor& weights, const std::vector<std::string>& row_labels,
                         const std::vector<std::string>& col_labels, const TextViewOptions& o) {
    if (weights.rank() != 2)
        throw std::invalid_argument("heatmap_text: expects rows×cols weights, got shape " + weights.shape().str());
    const int64_t rows = weights.size(0), cols = weights.size(1);
    check_labels("rows", row_labels.size(), rows);
    check_labels("columns", col_labels.size(), cols);
    auto row_label = [&](int64_t r) { return row_labels.empty() ? std::to_string(r) : row_labels[static_cast<size_t>(r)]; };
    auto col_label = [&](int64_t c) { return col_labels.empty() ? std::to_string(c) : col_labels[static_cast<size_t>(c)]; };
    size_t left = 0;
    for (int64_t r = 0; r < rows; ++r) left = std::max(left, width_of(row_label(r)));
    left += 1;

    std::ostringstream os;
    // column labels: one line of first characters, more lines when a label is longer
    size_t label_lines = 1;
    for (int64_t c = 0; c < cols; ++c) label_lines = std::max(label_lines, width_of(col_label(c)));
    for (size_t line = 0; line < label_lines; ++line) {
        os << std::string(left, ' ');
        for (int64_t c = 0; c < cols; ++c) {
            const std::vector<std::string> chars = characters_of(col_label(c));
            os << (line < chars.size() ? chars[line] : " ") << ' ';
        }
        os << '\n';
    }
    const Tensor& w = weights;
    for (int64_t r = 0; r < rows; ++r) {
        os << pad_right(row_label(r), left);
        for (int64_t c = 0; c < cols; ++c) os << cell(static_cast<double>(w.data()[r * cols + c]), o);
        os << '\n';
    }
    os << std::string(left, ' ') << "weight 0 " << cell(0, o) << cell(0.25, o) << cell(0.5, o) << cell(0.75, o)
       << cell(1, o) << " 1\n";
    return os.str();
}

std::string shaded_words(const std::vector<std::string>& words, const std::vector<double>& weights,
                         const TextViewOptions& o, double mark) {
    if (words.size() != weights.size())
        throw std::invalid_argument("shaded_words: " + std::to_string(words.size()) + " words but " +
                                    std::to_string(weights.size()) + " weights");
    double top = 0;
    for (double x : weights)
        if (std::isfinite(x)) top = std::max(top, x);
    std::ostringstream os;
    for (size_t i = 0; i < words.size(); ++i) {
        if (i) os << ' ';
        const double rel = top > 0 && std::isfinite(weights[i]) ? weights[i] / top : 0.0;
        if (o.colour) {
            // a light background for the attended words, dark text on it
            const int grey = 232 + static_cast<int>(std::lround(rel * 23));
            os << "\033[48;5;" << grey << "m" << (grey > 243 ? "\033[30m" : "\033[97m") << words[i] << "\033[0m";
        } else if (weights[i] >= mark) {
            char text[32];
            std::snprintf(text, sizeof text, "[%.2f]", weights[i]);
            os << words[i] << text;
        } else {
            os << words[i];
        }
    }
    return os.str();
}

std::string grid_text(const Tensor& grid, const TextViewOptions& o) {
    if (grid.rank() != 2) throw std::invalid_argument("grid_text: expects an h×w grid, got shape " + grid.shape().str());
    const Tensor& g = grid;
    double top = 0;
    for (int64_t i = 0; i < g.numel(); ++i)
        if (std::isfinite(g.data()[i])) top = std::max(top, static_cast<double>(g.data()[i]));
    std::ostringstream os;
    for (int64_t r = 0; r < g.size(0); ++r) {
        for (int64_t c = 0; c < g.size(1); ++c) {
            const double x = g.data()[r * g.size(1) + c];
            os << cell(top > 0 ? x / top : 0.0, o);
        }
        os << '\n';
    }
    return os.str();
}

}  // namespace attn
