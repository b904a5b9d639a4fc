// What an exercise's code computes on wide random inputs, for proving its
// grader (make check-exercises, scripts/exercises.py): course/probes.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attn::course {

// The values (outputs, gradients, an error's kind) the code of exercise
// `exercise` (its id) computes on draw number `draw`: shapes, options and
// inputs drawn from it. The same code gives the same values on every
// machine. Throws std::invalid_argument for an exercise without a probe.
std::vector<double> probe(const std::string& exercise, uint64_t draw);

}  // namespace attn::course
