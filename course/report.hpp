// What every room of the grader shares (course/grade.cpp reads top to
// bottom as what the grader does; each grade kind is a file of its own,
// course/grade_kinds.hpp): the report a kind's checks count into, one
// exercise's verdict, the ways a group of checks is run apart from the
// grader (a child process each: the student's code may crash there), and
// the course's files. Small on purpose: what only one room needs stays in
// that room's file.
#pragma once

#include <cstdint>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "course/checks.hpp"

namespace attn::course::grading {

// The course's files, read and written from the tree's root (where make
// grade runs the grader).
inline constexpr const char* kExerciseList = "course/exercises.txt";  // the exercises and their grade lines
inline constexpr const char* kFingerprints = "course/fingerprints.txt";  // the known mistakes (make fingerprints)
inline constexpr const char* kAssignment = "course/assignment.txt";  // a student's tree's exercises
inline constexpr const char* kProgress = "course/progress.txt";  // a student's attempts
inline constexpr const char* kCapstone = "course/capstone.txt";  // the capstone's entries (exercise 7.2)

// ---- the report ---------------------------------------------------------------------------
// Every check prints one line (and, when wrong, what it found) and counts.
struct Report {
    int checks = 0, wrong = 0;
    std::string outcomes;  // one letter a check, in order: r right, w wrong
    // (A timed check is left out of `outcomes`, which fingerprints a mistake:
    // a time is not a property of the code alone.)
    void right(const std::string& what, const std::string& detail = "", bool timed = false) {
        ++checks;
        if (!timed) outcomes += 'r';
        std::cout << "  right  " << what << (detail.empty() ? "" : "  (" + detail + ")") << "\n";
    }
    void fail(const std::string& what, const std::string& detail, bool timed = false) {
        ++checks;
        ++wrong;
        if (!timed) outcomes += 'w';
        std::cout << "  WRONG  " << what << ": " << detail << "\n";
    }
    // The counts as one line, for a child to send back (grade_apart).
    std::string counts() const { return std::to_string(checks) + " " + std::to_string(wrong) + " " + outcomes; }
};

// One exercise's verdict: the report's counts, and the known mistakes the
// code in the tree makes (course/fingerprints.hpp), by their words.
struct Verdict {
    int checks = 0, wrong = 0;
    std::string outcomes;
    std::vector<std::string> mistakes;
};

// Grades a group of checks (one catalog case, one op case) in a child
// process of its own: the student's code may crash, exit, hang or write
// past a tensor's end there, and that ends this group alone, said in words
// ("matmul (a constant b): the program was killed by a segmentation fault"),
// while the other groups are still graded. The child prints its lines as it
// goes and sends back its counts, which the parent checks before it adds them.
void grade_apart(Report& r, const std::string& what, const std::function<void(Report&)>& grade_group, int seconds);

// The grader's own checks (course/checks.cpp) and the engine's graphs
// (course/grade_engine.cpp): each check in a child process of its own, with
// a time limit: a crash or an endless loop in the student's code ends that
// check with a sentence.
void grade_each(Report& r, const std::vector<Check>& checks, int seconds);

// x in one significant digit after the point, 1.2e-07: a relative error.
std::string sci(double x);

}  // namespace attn::course::grading
