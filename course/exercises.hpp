// The exercise list (course/exercises.txt) as data: what each exercise cuts
// out of the library, what grades it, what to read. The grader
// (course/grade.cpp) reads it; so does scripts/exercises.py, which makes a
// student's tree from it and proves the graders (make check-exercises).
//
// The format, one block per exercise (see the file's header):
//
//     ## 1.1 The backward of the sigmoid
//     id: sigmoid_backward
//     cut: autograd/ops_elementwise.cpp | <the line that opens the cut block>
//     grade: ops sigmoid
//     read: docs/course/1-autograd.md#11-the-backward-of-the-sigmoid
//     hint: ...
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace attn::course {

// A block whose body a student writes: the line that opens it (ending in
// '{'), found in `file`; everything to its matching '}' is cut.
struct Cut {
    std::string file;
    std::string opening;
};

struct Exercise {
    std::string number;  // "1.1"
    std::string title;
    std::string id;      // "sigmoid_backward": make grade EX=sigmoid_backward
    std::vector<Cut> cuts;
    std::vector<Cut> twins;   // fast twins switched off in the student's tree
    std::vector<std::string> grade;  // "ops sigmoid", "entries additive_score", "engine", "gemm"
    std::vector<std::string> read;
    std::vector<std::string> hints;
    std::string speed;  // for "gemm": the fraction of the shipped kernel to reach, e.g. "0.25"
};

// Reads the list; throws std::runtime_error naming the file, the line and
// what was expected there (course/course_files.hpp's rules: a missing file,
// a folder, bytes that are not text are said so too).
std::vector<Exercise> read_exercises(const std::string& path);

// The same from the list's text (fuzz/course_exercises.cpp).
std::vector<Exercise> parse_exercises(std::string_view text, const std::string& path);

// The exercise with this id or number ("sigmoid_backward" or "1.1"), or nullptr.
const Exercise* find_exercise(const std::vector<Exercise>& all, const std::string& id_or_number);

}  // namespace attn::course
