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

// The same for catalog entries: every case of the entries named, its inputs
// and parameters drawn anew for each draw, outputs and the gradients to
// every input and parameter. Exercise 7.2 (the capstone) tells a small
// mistake made in the student's code that computes the same function from
// one that does not by it.
std::vector<double> probe_entries(const std::vector<std::string>& ids, uint64_t draw);

}  // namespace attn::course
