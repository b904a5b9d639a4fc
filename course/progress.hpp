// Progress, in a student's tree (course/progress.cpp): which exercises the
// tree assigns (course/assignment.txt), each graded attempt recorded
// (course/progress.txt), and make progress's table and page
// (build/course/progress.html) made from them.
#pragma once

#include <string>
#include <vector>

#include "course/exercises.hpp"
#include "course/report.hpp"

namespace attn::course::grading {

// The exercises of course/assignment.txt (none without it), each checked
// against the list: an unknown one throws, naming its line and the known ones.
std::vector<std::string> assigned(const std::vector<Exercise>& all);

// Adds the attempt's line to course/progress.txt (atomically:
// course/course_files.hpp). A file that cannot be read or written, or whose
// lines are not the grader's, is left alone, and the line is printed.
void record_attempt(const Exercise& ex, const Verdict& v);

// make progress: the assignment's exercises (every exercise without one),
// each with its status, attempts and the known mistakes met on the way, as
// a table and as build/course/progress.html. Its exit status (0).
int show_progress(const std::vector<Exercise>& all);

}  // namespace attn::course::grading
