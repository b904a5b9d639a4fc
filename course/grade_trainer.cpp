// The grade kind "trainer EXACT FLAGS…" (course/grade_kinds.hpp): builds the
// date translator (make build/examples/seq2seq), trains it with FLAGS into
// build/course/trainer/, and reads the test set's exact match from the
// RESULT line it prints; then looks for the report and its alignments.
// Every piece of the library the student wrote runs inside it, so its bar
// (EXACT) is what a correct library reaches with these flags.
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include "course/checks.hpp"
#include "course/child.hpp"
#include "course/grade_kinds.hpp"
#include "io/json.hpp"

namespace attn::course::grading {
namespace {

// A process's wait status, in words: "" for exit 0.
std::string status_words(int status) {
    if (WIFSIGNALED(status)) return "was killed by " + attn::course::signal_words(WTERMSIG(status));
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) return "stopped with exit code " + std::to_string(WEXITSTATUS(status));
    return "";
}

// The trainer is built before any exercise is graded, on every core and
// outside every time limit (a time limit measures the student's code, never
// our build): build_trainer() in main. What went wrong, "" when it built
// (the grading runs in a child process, which inherits it).
std::string g_trainer_build_problem;
const char* const kTrainerDir = "build/course/trainer";

}  // namespace

void build_trainer() {
    std::filesystem::create_directories(kTrainerDir);
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    std::cout << "building the date translator on your code for exercise 6.1 (make -j" << cores
              << " build/examples/seq2seq; a few minutes the first time; its output: " << kTrainerDir
              << "/build.log) ..." << std::endl;
    const auto start = std::chrono::steady_clock::now();
    // Run from `make grade`, this make would inherit the outer one's jobserver
    // (MAKEFLAGS) without its descriptors, warn "jobserver unavailable: using
    // -j1", and build on one core: it is given its own -j and no MAKEFLAGS.
    const int status = std::system(("MAKEFLAGS= MFLAGS= make --no-print-directory -s -j" + std::to_string(cores) +
                                    " build/examples/seq2seq > " + kTrainerDir + "/build.log 2>&1").c_str());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (status == 0) {
        std::cout << "built in " << static_cast<int>(seconds + 0.5) << " s\n";
        g_trainer_build_problem = "";
        return;
    }
    // the first error the compiler printed, the student's file first
    std::ifstream log(std::string(kTrainerDir) + "/build.log");
    std::string first;
    for (std::string line; std::getline(log, line);)
        if (line.find("error") != std::string::npos && first.empty()) first = line;
    g_trainer_build_problem = "your code does not compile in the trainer's build (" + std::string(kTrainerDir) +
                              "/build.log)" + (first.empty() ? "" : ": " + first);
}

void grade_trainer(Report& r, const std::string& threshold, const std::string& flags) {
    const std::string out_dir = kTrainerDir;
    std::cout << "\nthe date translator, trained on your code: build/examples/seq2seq " << flags << "\n";
    if (!g_trainer_build_problem.empty()) {
        r.fail("building build/examples/seq2seq", g_trainer_build_problem);
        return;
    }
    std::filesystem::remove_all(out_dir + "/seq2seq");
    const std::string log = out_dir + "/train.log";
    const auto start = std::chrono::steady_clock::now();
    const int status = std::system(("build/examples/seq2seq " + flags + " --out " + out_dir + " > " + log + " 2>&1").c_str());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::ifstream in(log);
    std::string text, line, result, test_line;
    while (std::getline(in, line)) {
        if (line.rfind("RESULT ", 0) == 0) result = line;
        if (line.rfind("test: ", 0) == 0) test_line = line;
        text += line + "\n";
    }
    if (status != 0 || result.empty()) {
        const size_t tail = text.size() > 600 ? text.size() - 600 : 0;
        const std::string how = status_words(status);
        r.fail("training", "the trainer " + (how.empty() ? std::string("ended without its RESULT line") : how) +
                               "; the end of " + log + ":\n" + text.substr(tail));
        return;
    }
    r.right("training", "finished in " + std::to_string(static_cast<int>(seconds + 0.5)) + " s; " + test_line);
    const Json parsed = parse_json(result.substr(7));  // after "RESULT "
    const Json* test = parsed.find("test");
    const Json* exact = test ? test->find("exact") : nullptr;
    const std::string what = "exact match on the test dates at least " + threshold;
    if (!exact) r.fail(what, "the RESULT line has no test score");
    else if (exact->as_double() >= std::strtod(threshold.c_str(), nullptr)) r.right(what, "exact " + num(exact->as_double()));
    else r.fail(what, "exact " + num(exact->as_double()) + ": lower than a correct library reaches with these flags");
    const std::string alignments = out_dir + "/seq2seq/attention.jsonl", report = out_dir + "/report.html";
    if (std::filesystem::exists(report) && std::filesystem::exists(alignments) &&
        std::filesystem::file_size(alignments) > 0)
        r.right("the report shows its alignments", "open " + report + ": click an output symbol");
    else
        r.fail("the report shows its alignments", report + " or " + alignments + " was not written");
}

}  // namespace attn::course::grading
