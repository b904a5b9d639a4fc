// The grader's small input files, read where they enter: the assignment
// (course/assignment.txt), the capstone (course/capstone.txt) and the
// student's progress (course/progress.txt). (The exercise list,
// course/exercises.txt, is read by course/exercises.hpp with the same rules.)
//
// Each parser takes the file's text and its path, and returns what it holds
// or throws std::runtime_error naming the path, the line and what was
// expected there: "course/progress.txt:3: expected 'WHEN<TAB>ID<TAB>...',
// got '...'". Bytes that are not text (a control character) are refused the
// same way. The fuzz targets of fuzz/course_*.cpp feed them arbitrary bytes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace attn::course {

// The whole file. Throws "PATH: not found (WHAT)", "PATH: is a folder, not a
// file", "PATH: is not a plain file" (a FIFO, a device), "PATH: holds N
// bytes, more than ..." (64 MiB), "PATH: cannot be read"; `what` says what
// the file is for.
std::string read_course_file(const std::string& path, const std::string& what);

// An exercise id a file names, and the line it is on.
struct NamedId {
    std::string id;
    int line = 0;
};

// course/assignment.txt: one exercise id or number a line; '#' comments and
// blank lines skipped; a line's surrounding spaces (and a Windows line end)
// ignored.
std::vector<NamedId> parse_assignment(std::string_view text, const std::string& path);

// course/capstone.txt: 'KEY: VALUE' lines (paper, entry, code, file), '#'
// comments and blank lines. The registry entries it names ('entry: ID').
std::vector<NamedId> parse_capstone_entries(std::string_view text, const std::string& path);

// One line of course/progress.txt, one attempt:
// WHEN<TAB>ID<TAB>right|wrong<TAB>RIGHT/CHECKS[<TAB>MISTAKE]...
// with WHEN as "YYYY-MM-DD HH:MM".
struct Attempt {
    std::string when;
    std::string id;
    bool right = false;
    long right_checks = 0;
    long checks = 0;
    std::vector<std::string> mistakes;  // the known mistakes it named, in words
};

std::vector<Attempt> parse_progress(std::string_view text, const std::string& path);

// The line (without its '\n') that parse_progress reads back as `a`.
std::string progress_line(const Attempt& a);

// Adds `a`'s line to the progress file at `path` (made if missing): the file
// is read and checked by parse_progress, then written again whole, to a
// temporary file renamed over it (io/atomic_file.hpp), so that a grader
// killed while writing leaves it as it was; its folder is locked meanwhile
// (flock(2)), so that graders at once each add their line. Throws std::runtime_error,
// leaving the file untouched, when it is a folder, cannot be read or
// written, or holds a line that is not the grader's.
void record_attempt(const std::string& path, const Attempt& a);

// Internal to the parsers (course/exercises.cpp too): the lines of `text`
// with their numbers; a line holding a byte that is no text is refused.
struct Line {
    std::string text;  // without its '\n' and a trailing '\r'
    int number = 0;
};
std::vector<Line> text_lines(std::string_view text, const std::string& path);

// A line as an error message quotes it: at most 60 characters, a byte that
// is not printable as \xNN.
std::string quote_line(std::string_view line);

}  // namespace attn::course
