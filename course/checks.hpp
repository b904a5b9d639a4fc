// The grader's own checks for the exercises whose code no catalog entry or
// op case covers (a grade line "checks NAME" in course/exercises.txt): the
// tensor layer's plain loops (tensor/reference.cpp) and the layers' formulas
// (nn/). Each compares the student's code with values worked out by hand, with
// the library's other implementation of the same thing (written separately:
// the vectorised tensor ops, the fused kernels), and with central differences.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "tensor/tensor.hpp"

namespace attn::course {

struct Check {
    std::string what;                              // one line: what is checked
    std::function<std::string()> check;            // "" when right, else what was found
    std::function<std::vector<double>()> observe;  // a few values, for the fingerprints (may be empty)
};

// What the grader's sentences share: a number to six digits; what an
// exception says, for a student (a stub's "not implemented" is "not written
// yet"); "" when got has `shape` and every element is want's to
// tolerance·(1 + |want|), else how many are wrong and the first, in words.
std::string num(double x);
// "expected 1.04384, got 1.04383" to six digits, or to as many as show that they differ.
std::string expected_got(double want, double got);
std::string what_threw(const std::exception& e);  // (course/child.cpp)
std::string differs(const Tensor& got, const Shape& shape, const std::vector<double>& want, double tolerance);

// The checks of "checks NAME": broadcast, axis_sum, gru_gates, layer_norm, adam, reinforce.
// Their random inputs are drawn from `seed`. Throws std::invalid_argument for
// another name.
std::vector<Check> named_checks(const std::string& name, uint64_t seed);

}  // namespace attn::course
