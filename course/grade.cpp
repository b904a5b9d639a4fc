// The coursework grader (make grade): runs one exercise's checks on the code
// in the tree and says, in sentences, what is right and what is not.
//
//     make grade                      every exercise of course/assignment.txt
//     make grade EX=sigmoid_backward  one exercise (its id or its number, 1.1)
//     make grade SEED=7               the same checks on inputs drawn from seed 7
//                                     (an instructor's hidden run)
//     make progress                   the assignment's exercises, status and attempts
//
// What it checks comes from the exercise list (course/exercises.txt), and the
// checks are the library's own: the catalog registry's independent
// references, finite differences and declared properties
// (tests/grad/catalog_checks.hpp), the op registry's gradient cases, and the
// engine's graphs. Where the student's outputs match a known mistake
// (course/fingerprints.txt, made from the mutation lists by `make
// fingerprints`), the mistake is named. Exit status 0 only when every check
// of every exercise graded is right.
//
// This file is what the grader does, top to bottom: one exercise graded
// (grade: each of its grade lines handed to its kind), in a child process
// of its own, and main's flags. The rest has a room of its own:
//     course/report.hpp        the report every check counts into, and the
//                              course's files
//     course/grade_kinds.hpp   the grade kinds, a file each (course/grade_*.cpp):
//                              what each grades and where its checks come from
//     course/fingerprints.hpp  what a known mistake computes, and naming it
//     course/progress.hpp      a student's attempts and make progress's page
//
// It is built in the double build beside the gradient tests, whose files
// register the catalog's cases: those files hold doctest's test cases too,
// so doctest's code is compiled here (and never run).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/checks.hpp"
#include "course/child.hpp"
#include "course/exercises.hpp"
#include "course/fingerprints.hpp"
#include "course/grade_kinds.hpp"
#include "course/probes.hpp"
#include "course/progress.hpp"
#include "course/report.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/catalog_checks.hpp"

using namespace attn;
using namespace attn::testing;
using namespace attn::course::grading;
using attn::course::Exercise;

using attn::course::ChildResult;
using attn::course::crash_words;
using attn::course::run_in_child;

// The sanitizers' settings for the grader, whose student objects are checked
// (the Makefile): no leak report at exit (the grader's own statics), and
// their report read by course/child.cpp, which turns it into words.
// No allocation stacks (malloc_context_size=0): every tensor allocation would
// record one, and a report would symbolize it; the access's own stack is
// what the grader reads.
extern "C" const char* __asan_default_options() {
    return "detect_leaks=0:exitcode=86:malloc_context_size=0:symbolize_inline_frames=0";
}
extern "C" const char* __ubsan_default_options() { return "halt_on_error=1:print_stacktrace=1:exitcode=86"; }

namespace {

// ---- one exercise --------------------------------------------------------------------------------
// --hidden: also the instructor's cases of course/hidden/ ("hidden:ID").
bool g_hidden = false;

// The whole declaration a cut block opens, on one line: the opening line of
// course/exercises.txt with the lines of the signature above it (the GEMM's
// opening line alone is "int64_t cols) {"), its spaces collapsed, the "{"
// dropped. The opening line alone if the file cannot be read.
std::string declaration_of(const attn::course::Cut& c) {
    std::ifstream in(c.file);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    const auto trimmed = [](const std::string& s) {
        const size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t\r");
        return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
    };
    std::string text = trimmed(c.opening);
    for (size_t i = 0; i < lines.size(); ++i) {
        if (lines[i] != c.opening) continue;
        // earlier lines of the same declaration: up to a line that ends one (;, { or }), a blank or a comment
        for (size_t k = i; k-- > 0;) {
            const std::string t = trimmed(lines[k]);
            if (t.empty() || t.rfind("//", 0) == 0 || t.back() == ';' || t.back() == '{' || t.back() == '}') break;
            text = t + " " + text;
        }
        // later ones, when the opening line is not the signature's last (policy_loss's)
        for (size_t k = i + 1; k < lines.size() && !text.empty() && text.back() != '{'; ++k)
            text += " " + trimmed(lines[k]);
        break;
    }
    if (!text.empty() && text.back() == '{') text.pop_back();
    std::string collapsed;
    for (char ch : text)
        if (!(ch == ' ' && (collapsed.empty() || collapsed.back() == ' ' || collapsed.back() == '('))) collapsed += ch;
    while (!collapsed.empty() && collapsed.back() == ' ') collapsed.pop_back();
    return collapsed;
}

// One exercise: what is the student's to write, then each of its grade
// lines handed to its kind (course/grade_kinds.hpp), each check counted in
// one report; then the known mistake the code makes, if it fails as one
// does (course/fingerprints.hpp), the verdict in a line, and the hints.
Verdict grade(const Exercise& ex, uint64_t seed, bool name_mistakes) {
    std::cout << "== Exercise " << ex.number << ": " << ex.title << "\n";
    for (const attn::course::Cut& c : ex.cuts)
    {
        const std::string d = declaration_of(c);
        // a backward function is a lambda inside a statement: "the function in return record(...)"
        const bool lambda = d.find("](") != std::string::npos && d.rfind("return ", 0) == 0;
        std::cout << "   yours to write: " << (lambda ? "the backward function (the lambda) of " : "the body of ") << d
                  << " (" << c.file << ")\n";
    }
    for (const std::string& r : ex.read) std::cout << "   read: " << r << "\n";
    Report r;
    for (const std::string& line : ex.grade) {
        std::istringstream words(line);
        std::string kind, name;
        words >> kind;
        if (kind == "entries") {
            while (words >> name) {
                const Entry* e = find_entry(name);
                if (!e) {
                    r.fail("catalog entry '" + name + "'", "has no registry entry (course/exercises.txt names it)");
                    continue;
                }
                uint64_t s = seed;
                int twin_cases = 0;
                for (const Case& c : e->cases) {
                    if (runs_the_fast_twin(c)) {
                        ++twin_cases, ++s;
                        continue;
                    }
                    grade_case(r, *e, c, s++);
                }
                if (twin_cases > 0)
                    std::cout << "\n(" << twin_cases << " cases of " << name
                              << "'s fused kernel left out: they run the library's fast twin, not your code)\n";
                if (const Entry* hidden = g_hidden ? find_entry("hidden:" + name) : nullptr)
                    for (const Case& c : hidden->cases) grade_case(r, *hidden, c, s++);
            }
        } else if (kind == "ops") {
            while (words >> name) grade_op(r, name, seed);
        } else if (kind == "checks") {
            while (words >> name) {
                std::cout << "\n" << name << "\n";
                grade_each(r, attn::course::named_checks(name, seed), 30);
            }
        } else if (kind == "trainer") {
            std::string threshold, flags, word;
            words >> threshold;
            while (words >> word) flags += (flags.empty() ? "" : " ") + word;
            grade_trainer(r, threshold, flags);
        } else if (kind == "engine") {
            std::cout << "\nthe engine's order\n";
            grade_each(r, engine_checks(), 10);
        } else if (kind == "gemm") {
            grade_gemm(r, ex, seed);
        } else if (kind == "write-test" || kind == "capstone") {
            double need = 0;  // write-test: a count; capstone: a share
            words >> need;
            std::vector<std::string> ids;
            while (words >> name) ids.push_back(name);
            const bool capstone = kind == "capstone";
            if (capstone) ids = capstone_entries(r);
            if (!ids.empty()) grade_written_tests(r, ex, capstone, need, ids, seed);
        } else {
            r.fail("the exercise list", "exercise " + ex.number + " has an unknown grade line '" + line + "'");
        }
    }
    Verdict v{r.checks, r.wrong, r.outcomes, {}};
    if (r.wrong > 0 && name_mistakes) {
        v.mistakes = known_mistakes(ex, r.outcomes);
        for (const std::string& m : v.mistakes)
            std::cout << "\nThis is a known mistake: " << m << ".\n";
    }
    std::cout << "\nExercise " << ex.number << ": ";
    if (r.checks == 0) std::cout << "no check ran: the exercise list names nothing to grade.\n";
    else if (r.wrong == 0) std::cout << "all " << r.checks << " checks right. Done.\n";
    else std::cout << r.wrong << " of " << r.checks << " checks wrong. Not done yet.\n";
    if (r.wrong > 0 && !ex.hints.empty()) {
        std::cout << "Hints:\n";
        for (const std::string& h : ex.hints) std::cout << "  - " << h << "\n";
    }
    return v;
}

// The grading of one exercise in a child process: a crash in the student's
// code ends that exercise's report with a sentence, not the grader.
Verdict grade_in_child(const Exercise& ex, uint64_t seed) {
    const ChildResult run = run_in_child(
        [&] {
            const Verdict v = grade(ex, seed, /*name_mistakes=*/seed == kFirstCaseSeed && !g_hidden);
            std::string out = std::to_string(v.checks) + "\n" + std::to_string(v.wrong) + "\n" + v.outcomes + "\n";
            for (const std::string& m : v.mistakes) out += m + "\n";
            return out;
        },
        600);
    Verdict v;
    std::istringstream in(run.payload);
    std::string checks, wrong;
    if (run.finished && std::getline(in, checks) && std::getline(in, wrong) && std::getline(in, v.outcomes)) {
        v.checks = std::stoi(checks);
        v.wrong = std::stoi(wrong);
        for (std::string m; std::getline(in, m);) v.mistakes.push_back(m);
        return v;
    }
    std::cout << "  WRONG  the grading stopped: " << (run.finished ? run.payload : crash_words(run)) << "\n";
    std::cout << "\nExercise " << ex.number << ": not done yet: it crashed before every check ran.\n";
    return {1, 1, "w", {}};
}

int usage(const std::vector<Exercise>& all) {
    std::cout << "make grade EX=<id>: grade one exercise; the exercises:\n";
    for (const Exercise& e : all) std::cout << "  " << std::left << std::setw(22) << e.id << e.number << " " << e.title << "\n";
    return 2;
}

}  // namespace

int main(int argc, char** argv) try {
    const std::vector<Exercise> all = attn::course::read_exercises(kExerciseList);
    std::vector<std::string> wanted;
    uint64_t seed = kFirstCaseSeed;
    bool fingerprint = false, progress = false;
    uint64_t probe_draws = 0;  // --probe N: N draws of course/probes.cpp
    uint64_t probe_from = 0;   // --probe-from B: those draws numbered B+1 … B+N (the judge's, drawn per run)
    std::string probe_out;     // --probe-out FILE: the draws written there, not to the standard output
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--seed" && i + 1 < argc) {
            const std::string v = argv[++i];
            if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos)
                throw std::invalid_argument("--seed (make grade SEED=n): expected a whole number from 0 to "
                                            "999999999999999999, got '" + v + "'");
            seed = std::stoull(v);
        }
        else if (a == "--fingerprint") fingerprint = true;
        else if (a == "--progress") progress = true;
        else if (a == "--hidden") g_hidden = true;
        else if (a == "--checks-only") g_checks_only = true;
        else if (a == "--probe-from" && i + 1 < argc) {
            const std::string v = argv[++i];
            if (v.empty() || v.size() > 15 || v.find_first_not_of("0123456789") != std::string::npos)
                throw std::invalid_argument("--probe-from: expected a whole number from 0 to 999999999999999, got '" +
                                            v + "'");
            probe_from = std::stoull(v);
        }
        else if (a == "--probe-out" && i + 1 < argc) probe_out = argv[++i];
        else if ((a == "--probe" || a == "--time-cap") && i + 1 < argc) {
            const std::string v = argv[++i];
            if (v.empty() || v.size() > 6 || v.find_first_not_of("0123456789") != std::string::npos || v == "0")
                throw std::invalid_argument(a + ": expected a whole number from 1 to 999999, got '" + v + "'");
            if (a == "--probe") probe_draws = std::stoull(v);
            else attn::course::set_time_cap(std::stoi(v));
        }
        else if (a.rfind("--", 0) == 0) throw std::invalid_argument("unknown flag " + a + " (--seed N, --hidden, --fingerprint, --progress, --checks-only, --probe N, --probe-from B, --probe-out FILE, --time-cap S)");
        else wanted.push_back(a);
    }
    if (progress) return show_progress(all);
    if (probe_draws > 0) {
        // What make check-exercises compares a mistake's code with the
        // solution's by (course/probes.cpp): one line a draw, each draw in a
        // child process of its own (a crash or a hang is that draw's value).
        // (All the draws in one child: a draw that crashes or hangs differs
        // from the solution's already, and what would follow it matters no more.)
        // The same draws, numbered from a base drawn at run time (--probe-from),
        // are the judge's of make grade-student: scripts/exercises.py compares
        // a student's values with this tree's own, so that a pass never rests
        // on what the student's process reported (docs/course/instructors.md).
        if (wanted.size() != 1) throw std::invalid_argument("--probe takes one exercise");
        const ChildResult run = run_in_child(
            [&] {
                std::ostringstream os;
                os << std::setprecision(17);
                for (uint64_t k = probe_from + 1; k <= probe_from + probe_draws; ++k) {
                    const std::vector<double> values = wanted[0] == "capstone"
                                                           ? attn::course::probe_entries(capstone_ids(), k)
                                                           : attn::course::probe(wanted[0], k);
                    os << "draw " << k << ": ";
                    for (double v : values) os << v << " ";
                    os << "\n";
                }
                return os.str();
            },
            60);
        const std::string draws = run.finished ? run.payload : "draw 0: stopped: " + crash_words(run) + "\n";
        if (probe_out.empty()) {
            std::cout << draws;
            return 0;
        }
        // --probe-out FILE: the draws alone, apart from whatever the student's code printed
        std::ofstream file(probe_out, std::ios::trunc);
        file << draws;
        if (!file.flush()) throw std::runtime_error("--probe-out: could not write " + probe_out);
        return 0;
    }
    if (wanted.empty()) wanted = assigned(all);
    if (wanted.empty()) return usage(all);
    std::vector<const Exercise*> exercises;
    for (const std::string& w : wanted) {
        const Exercise* e = attn::course::find_exercise(all, w);
        if (!e) {
            std::cout << "no exercise '" << w << "' in " << kExerciseList << " (EX= takes an id or a number)\n";
            return usage(all);
        }
        exercises.push_back(e);
    }
    if (fingerprint) {
        // What make fingerprints records for one exercise (with a mistake
        // applied): which checks fail, and the values.
        if (exercises.size() != 1) throw std::invalid_argument("--fingerprint takes one exercise");
        std::ostringstream quiet;
        std::streambuf* const out = std::cout.rdbuf(quiet.rdbuf());
        const Verdict v = grade(*exercises[0], kFirstCaseSeed, /*name_mistakes=*/false);
        std::cout.rdbuf(out);
        std::cout << "checks: " << v.outcomes << "\nvalues:";
        for (double x : observed(*exercises[0])) std::cout << " " << std::setprecision(17) << x;
        std::cout << "\n";
        return 0;
    }
    const bool student_tree = std::filesystem::exists(kAssignment);
    bool trainer_built = false;
    for (const Exercise* e : exercises)
        for (const std::string& line : e->grade)
            if (line.rfind("trainer", 0) == 0 && !trainer_built) {
                build_trainer();
                trainer_built = true;
            }
    int wrong = 0;
    for (const Exercise* e : exercises) {
        const Verdict v = grade_in_child(*e, seed);  // names known mistakes at the default seed only
        if (student_tree) record_attempt(*e, v);
        if (v.wrong > 0 || v.checks == 0) ++wrong;
        std::cout << "\n";
    }
    if (exercises.size() > 1)
        std::cout << exercises.size() - static_cast<size_t>(wrong) << " of " << exercises.size() << " exercises done.\n";
    return wrong == 0 ? 0 : 1;
} catch (const std::exception& e) {
    std::cerr << "grade: " << e.what() << "\n";
    return 2;
}
