// Attention drawn in a terminal, for the trainers' --predict: a heatmap of
// weights (rows × columns), words shaded by their weight, and a small map of
// weights over an image grid. With colour each cell is a background shade
// (ANSI 256-colour greys, 232 = black … 255 = white); without it, a block
// character of the weight's level ( ░▒▓█) or the weight in digits, so a
// picture also survives a pipe, a log file or NO_COLOR.
//
//     std::cout << heatmap_text(weights, output_symbols, input_symbols, {.colour = colour_terminal()});
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "tensor/tensor.hpp"

namespace attn {

// Whether stdout is a terminal that should get ANSI colour: a tty, TERM not
// "dumb", NO_COLOR unset (https://no-color.org).
bool colour_terminal();
// Whether stdout is a terminal at all.
bool stdout_is_terminal();
// What --predict works on: the arguments given, or, when there are none, the
// non-empty lines of standard input (input_lines).
std::vector<std::string> arguments_or_stdin_lines(const std::vector<std::string>& arguments);
// The non-empty lines of `in`, without a Windows line's '\r' and without a
// byte-order mark before the first (each once became part of the input, and
// changed the answer). A line longer than kMaxInputLine bytes is refused,
// naming `what` ("standard input") and the line, before more of it is read:
// `--predict < /dev/zero` once grew without bound.
constexpr size_t kMaxInputLine = size_t{1} << 20;
std::vector<std::string> input_lines(std::istream& in, const std::string& what = "standard input");

struct TextViewOptions {
    bool colour = false;
};

// weights rows×cols (each in [0, 1]; a row of attention sums to 1): one line
// per row, its label first, one cell of two characters per column; the
// column labels above (their first character, or vertically when longer),
// and a scale below.
std::string heatmap_text(const Tensor& weights, const std::vector<std::string>& row_labels,
                         const std::vector<std::string>& col_labels, const TextViewOptions& options = {});

// The words with their weights: shaded backgrounds (colour), or word[0.42]
// for the weights above `mark` and the word alone below it (no colour).
// `weights` are shown relative to their largest value, so the most attended
// word is always the brightest.
std::string shaded_words(const std::vector<std::string>& words, const std::vector<double>& weights,
                         const TextViewOptions& options = {}, double mark = 0.1);

// An h×w grid of weights as h lines of w two-character cells, the largest
// weight brightest (block characters without colour).
std::string grid_text(const Tensor& grid, const TextViewOptions& options = {});

// The level 0..4 of a weight in [0, 1] for the block characters " ░▒▓█":
// 0 below 0.1, then steps of 0.225.
int block_level(double weight);

}  // namespace attn
