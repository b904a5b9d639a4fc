// Fingerprints: what a known mistake computes (course/fingerprints.cpp).
// make fingerprints builds each mistake of the mutation lists into the
// library in turn and records, with `grade --fingerprint`, which checks it
// fails and a few of its values (observed) into course/fingerprints.txt;
// when the code in the tree fails the same checks with the same values,
// the grader names the mistake (known_mistakes) instead of leaving the
// student with the failed checks alone.
#pragma once

#include <string>
#include <vector>

#include "course/exercises.hpp"

namespace attn::course::grading {

// What the code in the tree computes on the exercise's grading cases (empty
// if it throws or crashes), computed in a child process.
std::vector<double> observed(const Exercise& ex);

// The known mistakes the code in the tree makes, by their words: the same
// checks wrong (`outcomes`, Report's letters) and the same values.
std::vector<std::string> known_mistakes(const Exercise& ex, const std::string& outcomes);

}  // namespace attn::course::grading
