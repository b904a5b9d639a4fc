// examples/common/terminal_view: the pictures --predict draws in a terminal,
// compared with text written out by hand.
#include <doctest/doctest.h>

#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "examples/common/svg.hpp"
#include "examples/common/terminal_view.hpp"

using namespace attn;

TEST_CASE("terminal view: block levels of weights") {
    CHECK(block_level(0) == 0);
    CHECK(block_level(0.099) == 0);
    CHECK(block_level(0.1) == 1);
    CHECK(block_level(0.324) == 1);
    CHECK(block_level(0.326) == 2);
    CHECK(block_level(0.55) == 3);
    CHECK(block_level(0.8) == 4);
    CHECK(block_level(1) == 4);
    CHECK(block_level(std::numeric_limits<double>::quiet_NaN()) == 0);
}

TEST_CASE("terminal view: a heatmap without colour, row by row, with its labels") {
    // 2 outputs × 3 inputs; the second row attends mostly to the last input
    const Tensor w = Tensor::from({0.7f, 0.2f, 0.1f, 0.0f, 0.3f, 0.95f}, Shape{2, 3});
    const std::string text = heatmap_text(w, {"x", "</s>"}, {"a", "b", "␣"});
    const std::string expected =
        "     a b ␣ \n"
        "x    ▓▓░░░░\n"
        "</s>   ░░██\n"
        "     weight 0   ░░▒▒▓▓██ 1\n";
    CHECK(text == expected);
}

TEST_CASE("terminal view: long column labels are written downwards") {
    const Tensor w = Tensor::from({1.0f, 0.0f}, Shape{1, 2});
    const std::string text = heatmap_text(w, {"AH0"}, {"ab", "c"});
    CHECK(text.rfind("    a c \n    b   \nAH0 ██  \n", 0) == 0);
}

TEST_CASE("terminal view: colour cells are ANSI greys from 232 (weight 0) to 255 (weight 1)") {
    const Tensor w = Tensor::from({0.0f, 1.0f, 0.5f}, Shape{1, 3});
    const std::string text = heatmap_text(w, {"r"}, {"a", "b", "c"}, {.colour = true});
    CHECK(text.find("\033[48;5;232m  \033[0m\033[48;5;255m  \033[0m\033[48;5;244m  \033[0m\n") != std::string::npos);
}

TEST_CASE("terminal view: label counts must match the weights") {
    const Tensor w = Tensor::zeros(Shape{2, 3});
    CHECK_THROWS_WITH_AS(heatmap_text(w, {"x"}, {}), "heatmap_text: rows: 1 labels for 2 weights", std::invalid_argument);
    CHECK_THROWS_WITH_AS(heatmap_text(w, {}, {"a"}), "heatmap_text: columns: 1 labels for 3 weights",
                         std::invalid_argument);
    CHECK_THROWS_AS(heatmap_text(Tensor::zeros(Shape{3}), {}, {}), std::invalid_argument);
}

TEST_CASE("terminal view: shaded words mark the attended ones, relative to the largest weight") {
    CHECK(shaded_words({"the", "food", "was", "great"}, {0.02, 0.30, 0.05, 0.63}) == "the food[0.30] was great[0.63]");
    // colour: the largest weight is white (255) with dark text, a zero weight black (232) with light text
    const std::string c = shaded_words({"a", "b"}, {0.0, 0.4}, {.colour = true});
    CHECK(c == "\033[48;5;232m\033[97ma\033[0m \033[48;5;255m\033[30mb\033[0m");
    CHECK_THROWS_AS(shaded_words({"a"}, {0.1, 0.2}), std::invalid_argument);
}

TEST_CASE("terminal view: a grid of weights, the largest brightest") {
    const Tensor g = Tensor::from({0.0f, 0.5f, 0.05f, 0.25f}, Shape{2, 2});
    // relative to 0.5: 0, 1, 0.1, 0.5
    CHECK(grid_text(g) == "  ██\n░░▒▒\n");
}

TEST_CASE("svg: numbered paths for several pictures") {
    CHECK(numbered_path("a.svg", 0, 1) == "a.svg");
    CHECK(numbered_path("out/a.svg", 1, 3) == "out/a-2.svg");
    CHECK(numbered_path("out.d/a", 0, 2) == "out.d/a-1");
}

// Lines piped from a Windows file once kept their '\r' (and a byte-order
// mark its three bytes), which --predict read as input symbols.
TEST_CASE("input lines: the non-empty lines, without '\\r' or a byte-order mark") {
    std::istringstream in("\xEF\xBB\xBFNov 22 2026\r\n\r\n4 July 1976\r\nlast line");
    CHECK(input_lines(in) == std::vector<std::string>{"Nov 22 2026", "4 July 1976", "last line"});
    std::istringstream plain("a\nb\n");
    CHECK(input_lines(plain) == std::vector<std::string>{"a", "b"});
    CHECK(arguments_or_stdin_lines({"given"}) == std::vector<std::string>{"given"});
    // A line of exactly the limit is read; one byte more is refused, naming the line.
    std::istringstream at_limit("x\n" + std::string(kMaxInputLine, 'a') + "\ny");
    const std::vector<std::string> read = input_lines(at_limit);
    REQUIRE(read.size() == 3);
    CHECK(read[1].size() == kMaxInputLine);
    std::istringstream over("x\n\n" + std::string(kMaxInputLine + 1, 'a'));
    CHECK_THROWS_WITH_AS(input_lines(over), "standard input, line 3: longer than 1048576 bytes (one input per line)",
                         std::runtime_error);
}
