// Running a student's code where nothing it does can take the grader down or
// speak for it (course/child.cpp). A check runs in a child process of its
// own, in a process group of its own, with a time limit the parent enforces;
// its result comes back as one framed message the parent validates; and
// however it ends — a crash, an exit() inside the check, a memory error the
// sanitizers caught, a hang, a process left behind — the parent says so in
// words and kills what is left.
#pragma once

#include <exception>
#include <functional>
#include <string>

namespace attn::course {

// What an exception says, for a student: a stub's "not implemented" is "not
// written yet (…)", anything else "threw an error: …".
std::string what_threw(const std::exception& e);

struct ChildResult {
    bool finished = false;  // the body returned and its whole payload arrived, then the child exited 0
    bool timed_out = false;
    int signal = 0;          // the signal that ended the child, if one did
    int exit_code = -1;      // the code it exited with, if it exited
    bool framed = false;     // a valid result frame arrived
    std::string payload;     // what the body returned (when framed)
    std::string problem;     // when not finished: what went wrong, in words (crash_words)
    std::string report;      // a sanitizer's or the standard library's report, whole, if one stopped it
    double seconds = 0;      // how long the child ran
};

// Runs body in a child process, for at most `seconds`, and returns what it
// returned (an exception escaping body is the payload "threw an error: …",
// as what_threw says). The child's standard error is kept and given back on
// the parent's, except a sanitizer's report, which becomes `problem`.
ChildResult run_in_child(const std::function<std::string()>& body, int seconds);

// A cap on every time limit after this (0: none): make check-exercises
// grades hundreds of mistakes, some of which loop forever, and needs no
// student's patience (grade --time-cap S).
void set_time_cap(int seconds);

// What went wrong, in a sentence a student reads: "your code called exit(3)
// inside the check", "the program was killed by a segmentation fault (…)",
// "your code read 8 bytes past the end of a tensor's memory in binary
// (tensor/reference.cpp:51)", "still running after 30 s (the time limit) …".
std::string crash_words(const ChildResult& r);

// The words of a sanitizer's report (AddressSanitizer, UndefinedBehavior-
// Sanitizer, the standard library's assertions): what was done wrong and
// where, the first frame in the tree's own files. "" when the text holds none.
std::string memory_words(const std::string& report);

// A signal as words: "a segmentation fault (SIGSEGV: memory read or written
// outside what the program owns …)".
std::string signal_words(int signal);

}  // namespace attn::course
