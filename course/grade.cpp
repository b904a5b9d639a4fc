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
// engine's graphs below. Where the student's outputs match a known mistake
// (course/fingerprints.txt, made from the mutation lists by `make
// fingerprints`), the mistake is named. Exit status 0 only when every check
// of every exercise graded is right.
//
// It is built in the double build beside the gradient tests, whose files
// register the catalog's cases: those files hold doctest's test cases too,
// so doctest's code is compiled here (and never run).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "autograd/gradcheck.hpp"
#include "autograd/ops.hpp"
#include "course/checks.hpp"
#include "course/child.hpp"
#include "course/course_files.hpp"
#include "course/guard.hpp"
#include "course/exercises.hpp"
#include "course/probes.hpp"
#include "io/json.hpp"
#include "tests/grad/catalog_checks.hpp"
#include "tensor/gemm/gemm.hpp"
#include "tensor/gemm/gemm_internal.hpp"
#include "tensor/parallel.hpp"
#include "tests/grad/registry.hpp"

using namespace attn;
using namespace attn::testing;
using attn::course::Exercise;

using attn::course::Check;
using attn::course::ChildResult;
using attn::course::crash_words;
using attn::course::run_in_child;
using attn::course::num;
using attn::course::what_threw;

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

const char* kExerciseList = "course/exercises.txt";
const char* kFingerprints = "course/fingerprints.txt";
const char* kAssignment = "course/assignment.txt";
const char* kProgress = "course/progress.txt";
const char* kCapstone = "course/capstone.txt";

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

// Grades a group of checks (one catalog case, one op case) in a child
// process of its own: the student's code may crash, exit, hang or write
// past a tensor's end there, and that ends this group alone, said in words
// ("matmul (a constant b): the program was killed by a segmentation fault"),
// while the other groups are still graded. The child prints its lines as it
// goes and sends back its counts, which the parent checks before it adds them.
void grade_apart(Report& r, const std::string& what, const std::function<void(Report&)>& grade_group, int seconds) {
    const ChildResult run = run_in_child(
        [&] {
            Report mine;
            grade_group(mine);
            std::cout.flush();
            return mine.counts();
        },
        seconds);
    std::istringstream in(run.payload);
    int checks = -1, wrong = -1;
    std::string outcomes;
    in >> checks >> wrong >> outcomes;
    const bool consistent = run.finished && checks >= 0 && wrong >= 0 && wrong <= checks &&
                            static_cast<int>(outcomes.size()) <= checks &&
                            outcomes.find_first_not_of("rw") == std::string::npos &&
                            std::count(outcomes.begin(), outcomes.end(), 'w') <= wrong;
    if (!consistent) {
        r.fail(what, run.finished ? "its checks' results did not come back whole" : crash_words(run));
        return;
    }
    r.checks += checks;
    r.wrong += wrong;
    r.outcomes += outcomes;
}

std::string sci(double x) {
    std::ostringstream os;
    os << std::scientific << std::setprecision(1) << x;
    return os.str();
}

// ---- catalog entries: value, gradients, masking, properties -----------------------------------------
void grade_gradient_table(Report& r, const std::string& what, const GradcheckResult& g,
                          const std::vector<std::string>& names) {
    for (size_t i = 0; i < g.tensors.size(); ++i) {
        const GradcheckTensor& t = g.tensors[i];
        const std::string label = what + " " + (i < names.size() ? names[i] : std::to_string(i)) + " (" +
                                  t.shape.str() + ")";
        if (t.wrong == 0) {
            r.right("gradient to " + label, "worst relative error " + sci(t.worst_relative));
        } else {
            r.fail("gradient to " + label,
                   std::to_string(t.wrong) + " of " + std::to_string(t.checked) + " derivatives wrong, worst " +
                       "relative error " + sci(t.worst_relative) + "; first at " + index_str(t.shape, t.first_wrong) +
                       ": yours (analytic) " + num(t.analytic) + ", central difference " + num(t.numeric));
        }
    }
}

// A case of a mechanism's fused kernel ("fused heads, …"): the library's fast
// twin, which the exercises switch off or leave aside; it does not run the
// student's code, so it is not theirs to be graded on.
bool runs_the_fast_twin(const Case& c) { return c.variant.rfind("fused", 0) == 0; }

void grade_case_here(Report& r, const Entry& e, const Case& c, uint64_t seed);

void grade_case(Report& r, const Entry& e, const Case& c, uint64_t seed) {
    std::cout << "\n" << e.id << " (" << c.variant << ")\n";
    grade_apart(r, "this case", [&](Report& mine) { grade_case_here(mine, e, c, seed); }, 300);
}

void grade_case_here(Report& r, const Entry& e, const Case& c, uint64_t seed) {
    try {
        const Prepared p(e, c, seed);
        bool values_ok = true;
        for (const ValueFinding& f : check_values(p)) {
            const std::string what = "value of '" + f.output + "' against the reference";
            if (!f.problem.empty()) {
                r.fail(what, f.problem);
                values_ok = false;
            } else if (f.wrong > 0) {
                r.fail(what, std::to_string(f.wrong) + " of " + std::to_string(f.total) + " elements wrong; first at " +
                                 index_str(f.shape, f.first) + ": " + attn::course::expected_got(f.expected, f.got));
                values_ok = false;
            } else {
                r.right(what, std::to_string(f.total) + " elements");
            }
        }
        const GradientFindings g = check_gradients(p, /*every_element=*/true);
        if (!g.problem.empty()) r.fail("gradients", g.problem);
        if (g.checked) {
            std::vector<std::string> inputs;
            for (size_t i = 0; i < g.inputs.tensors.size(); ++i) inputs.push_back(std::to_string(i));
            grade_gradient_table(r, "input", g.inputs, inputs);
            grade_gradient_table(r, "parameter", g.parameters, g.parameter_names);
        }
        if (!c.masking.empty()) {
            const std::vector<std::string> masking = check_masking(p);
            if (masking.empty()) {
                r.right("masking: a masked key changes nothing, whatever it holds; all masked gives zeros");
            } else {
                std::string detail = masking[0];
                if (masking.size() > 1) detail += " (and " + std::to_string(masking.size() - 1) + " more)";
                r.fail("masking", detail);
            }
        }
        for (const PropertyFinding& f : check_properties(p)) {
            if (f.error.empty()) r.right("property: " + f.name);
            else r.fail("property: " + f.name, f.error);
        }
        if (!values_ok) std::cout << "  (a wrong value usually explains the gradients and properties after it)\n";
    } catch (const std::exception& ex) {
        r.fail("this case", what_threw(ex));
    }
}

// ---- one op's gradient cases ---------------------------------------------------------------------
void grade_op(Report& r, const std::string& op, uint64_t seed) {
    int cases = 0;
    for (const OpCase& c : op_registry()) {
        if (c.op != op) continue;
        ++cases;
        std::cout << "\n" << op << " (" << c.variant << ")\n";
        grade_apart(r, "this case", [&](Report& mine) {
            try {
                Generator gen(seed + static_cast<uint64_t>(cases));
                const std::vector<Tensor> inputs = sample_inputs(c, gen);
                GradcheckOptions every;
                every.every_element = true;
                const GradcheckResult g = gradcheck(op, c.build, inputs, every);
                if (g.tensors.empty()) {
                    mine.fail("gradients", g.message);
                    return;
                }
                std::vector<std::string> names;
                for (size_t i = 0; i < inputs.size(); ++i) names.push_back(std::to_string(i));
                grade_gradient_table(mine, "input", g, names);
            } catch (const std::exception& ex) {
                mine.fail("this case", what_threw(ex));
            }
        }, 120);
    }
    if (cases == 0) r.fail("the op registry", "has no case of '" + op + "' (tests/grad/registry.cpp)");
}

// ---- the engine's graphs ----------------------------------------------------------------------------
// "" when every element of got is want's, else the first difference.
std::string same(const Tensor& got, const std::vector<double>& want, double tolerance = 1e-9) {
    if (!got.defined()) return "no gradient reached x";
    return attn::course::differs(got, Shape{static_cast<int64_t>(want.size())}, want, tolerance);
}

std::vector<Check> engine_checks() {
    std::vector<Check> checks;
    // y = Σ (2x)·(3x): x reaches y by two paths, dy/dx = 12x.
    auto diamond = [] {
        Var x(Tensor::from({1, -2, 0.5}), true);
        sum((x * 2.0) * (x * 3.0)).backward();
        return x.grad();
    };
    checks.push_back({"a diamond, y = Σ (2x)·(3x): dy/dx = 12x, both paths added",
                      [=] { return same(diamond(), {12, -24, 6}); },
                      [=] { const Tensor g = diamond(); return std::vector<double>(g.data(), g.data() + g.numel()); }});
    // y = Σ a·b·c with a = x + 1, b = a·x, c = b + a: nodes used by several
    // later ones, which must all hand their gradient in before a node runs.
    auto shared = [] {
        Var x(Tensor::from({0.5, -1.5}), true);
        Var a = x + 1.0;
        Var b = a * x;
        Var c = b + a;
        sum(a * b * c).backward();
        return x.grad();
    };
    // a = x+1, b = x²+x, c = x²+2x+1 = (x+1)²: y = (x+1)·x(x+1)·(x+1)² = x(x+1)⁴,
    // dy/dx = (x+1)⁴ + 4x(x+1)³ = (x+1)³(5x+1).
    auto dydx = [](double x) { return std::pow(x + 1, 3) * (5 * x + 1); };
    checks.push_back({"nodes used by several later ones: y = Σ a·b·c, a = x+1, b = a·x, c = b+a",
                      [=] { return same(shared(), {dydx(0.5), dydx(-1.5)}); },
                      [=] { const Tensor g = shared(); return std::vector<double>(g.data(), g.data() + g.numel()); }});
    // A ladder of 30 diamonds, z ← z·1 + z·1: 2³⁰ paths from x to the top,
    // each visited once by a search that marks what it has seen.
    auto ladder = [] {
        Var x(Tensor::from({1.0}), true);
        Var z = x;
        for (int k = 0; k < 30; ++k) z = z * 1.0 + z * 1.0;
        sum(z).backward();
        return x.grad();
    };
    checks.push_back({"a ladder of 30 diamonds (2^30 paths): each node visited once, dy/dx = 2^30",
                      [=] { return same(ladder(), {1073741824.0}); },
                      [=] { const Tensor g = ladder(); return std::vector<double>(g.data(), g.data() + g.numel()); }});
    // An RNN unrolled over six steps, one weight w shared by every step:
    // h_t = tanh(w·h_{t−1} + x_t), y = h_6. Its gradient is back-propagation
    // through time, written out below as a loop: g = ∂y/∂h_t from the last
    // step back, each step adding (1 − h_t²)·h_{t−1}·g to dy/dw and handing
    // w·(1 − h_t²)·g to h_{t−1}. The engine must run each step's node once,
    // after every later step has handed in its share.
    const std::vector<double> xs = {0.5, -0.3, 0.8, 0.1, -0.6, 0.2};
    auto rnn = [xs] {
        Var w(Tensor::from({0.7}), true), h(Tensor::from({0.25}), true);
        const Var h0 = h;
        for (const double x : xs) h = tanh(w * h + x);
        h.backward();
        return std::vector<Tensor>{w.grad(), h0.grad()};
    };
    auto bptt = [xs] {
        std::vector<double> h = {0.25};
        for (const double x : xs) h.push_back(std::tanh(0.7 * h.back() + x));
        double g = 1, dw = 0;
        for (size_t t = xs.size(); t >= 1; --t) {
            const double d = g * (1 - h[t] * h[t]);
            dw += d * h[t - 1];
            g = d * 0.7;
        }
        return std::vector<double>{dw, g};  // dy/dw, dy/dh_0
    };
    checks.push_back({"an RNN unrolled over 6 steps, w shared by every step: dy/dw and dy/dh_0 as BPTT by hand",
                      [=] {
                          const std::vector<Tensor> g = rnn();
                          const std::vector<double> want = bptt();
                          const std::string w = same(g[0], {want[0]});
                          if (!w.empty()) return "dy/dw: " + w;
                          const std::string h0 = same(g[1], {want[1]});
                          return h0.empty() ? h0 : "dy/dh_0: " + h0;
                      },
                      [=] {
                          const std::vector<Tensor> g = rnn();
                          std::vector<double> v;
                          for (const Tensor& t : g)
                              if (t.defined()) v.push_back(t[0]);
                          return v;
                      }});
    // A chain of 100,000 additions: no recursion that deep fits a stack.
    checks.push_back({"a chain of 100,000 additions: backward returns, dy/dx = 1",
                      [] {
                          // A 1 MiB stack, as on some systems' threads: a search that
                          // recurses once per node needs several (8 MiB here hid it).
                          const rlimit small{1 << 20, 1 << 20};
                          setrlimit(RLIMIT_STACK, &small);
                          Var x(Tensor::from({2.0}), true);
                          Var z = x;
                          for (int k = 0; k < 100000; ++k) z = z + 1.0;
                          z.backward();
                          return same(x.grad(), {1.0});
                      },
                      nullptr});
    // Walking a freed graph again is refused, with a sentence.
    checks.push_back({"backward() twice through the same graph is refused with an error that says why",
                      [] {
                          Var x(Tensor::from({1.0, 2.0}), true);
                          Var h = tanh(x);
                          Var y = sum(h * h);
                          Var y2 = sum(h);
                          y.backward();
                          try {
                              y2.backward();
                          } catch (const std::runtime_error& e) {
                              if (std::string(e.what()).find("already freed") != std::string::npos) return std::string();
                              return "the error says: " + std::string(e.what());
                          }
                          return std::string("the second backward() ran through a freed graph without an error");
                      },
                      nullptr});
    // A refused backward() leaves the search where it stopped: the next one,
    // on a new graph, must start afresh. 3x and the freed graph's h share
    // nothing, so dy/dx = 3 whatever the first pass left behind.
    auto after_refusal = [] {
        Var x(Tensor::from({1.0, 2.0}), true);
        Var h = tanh(x);
        Var y = sum(h * h), y2 = sum(h + h * 2.0);
        y.backward();
        try {
            y2.backward();
        } catch (const std::runtime_error&) {
        }
        Var w(Tensor::from({0.5, -1.0}), true);
        sum(w * 3.0).backward();
        return w.grad();
    };
    checks.push_back({"after a backward() refused halfway, the next one on a new graph is right: d(Σ 3w)/dw = 3",
                      [=] { return same(after_refusal(), {3, 3}); },
                      [=] { const Tensor g = after_refusal(); return std::vector<double>(g.data(), g.data() + g.numel()); }});
    // A node with more inputs than a node keeps inline (three): concat of five.
    auto five = [] {
        std::vector<Var> parts;
        for (int k = 0; k < 5; ++k) parts.emplace_back(Tensor::from({static_cast<real>(k + 1)}), true);
        const Var c = concat(parts, 0);
        sum(c * c).backward();  // d/dp_k = 2 p_k
        std::vector<double> g;
        for (const Var& p : parts) g.push_back(p.grad().defined() ? p.grad()[0] : std::nan(""));
        return g;
    };
    checks.push_back({"a node with five inputs, concat(p_1 … p_5): d(Σ c²)/dp_k = 2 p_k for each",
                      [=] {
                          const std::vector<double> g = five();
                          for (size_t k = 0; k < g.size(); ++k)
                              if (!(std::fabs(g[k] - 2.0 * static_cast<double>(k + 1)) <= 1e-12))
                                  return "dy/dp_" + std::to_string(k + 1) + ": expected " + num(2.0 * static_cast<double>(k + 1)) +
                                         ", got " + num(g[k]);
                          return std::string();
                      },
                      [=] { return five(); }});
    return checks;
}

// ---- the grader's own checks (course/checks.cpp) -------------------------------------------------------
// Each check in a child process of its own, with a time limit: a crash or an
// endless loop in the student's code ends that check with a sentence.
void grade_each(Report& r, const std::vector<Check>& checks, int seconds) {
    for (const Check& c : checks) {
        const ChildResult run = run_in_child(c.check, seconds);
        if (!run.finished) r.fail(c.what, crash_words(run));
        else if (run.payload.empty()) r.right(c.what);
        else r.fail(c.what, run.payload);
    }
}

// ---- a trainer, run on the code in the tree -----------------------------------------------------------
// "trainer EXACT FLAGS…": builds the date translator (make), trains it with
// FLAGS into build/course/trainer/, and reads the test set's exact match from
// the RESULT line it prints; then looks for the report and its alignments.
// Every piece of the library the student wrote runs inside it.
// A process's wait status, in words: "" for exit 0.
std::string status_words(int status) {
    if (WIFSIGNALED(status)) return "was killed by " + attn::course::signal_words(WTERMSIG(status));
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) return "stopped with exit code " + std::to_string(WEXITSTATUS(status));
    return "";
}

// The trainer is built before any exercise is graded, on every core and
// outside every time limit (a time limit measures the student's code, never
// our build): build_trainer() in main. "" when it built.
std::string g_trainer_build_problem;
const char* const kTrainerDir = "build/course/trainer";

std::string build_trainer() {
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
        return "";
    }
    // the first error the compiler printed, the student's file first
    std::ifstream log(std::string(kTrainerDir) + "/build.log");
    std::string first;
    for (std::string line; std::getline(log, line);)
        if (line.find("error") != std::string::npos && first.empty()) first = line;
    return "your code does not compile in the trainer's build (" + std::string(kTrainerDir) + "/build.log)" +
           (first.empty() ? "" : ": " + first);
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

// ---- the student's tests, graded on right and on wrong code ----------------------------------------
// "write-test N ID…" (exercise 7.1) and "capstone SHARE" (7.2): the checks
// graded are the student's own registry entries (their references, cases,
// masking and properties). They must pass on the library as it is, and on
// each correct variant listed for the entry (course/wheats.txt); then each
// known mistake is built into the library in turn (scripts/exercises.py
// mistakes: tests/mutations/ for 7.1, mistakes made from the student's own
// code for 7.2), and the student's checks must fail on at least N of them,
// or on that share. The grader says which mistakes got through, as
// Brown's Examplar does with its "chaffs".
bool g_checks_only = false;  // --checks-only: the entries' checks alone (what each built mistake runs)

// The entries course/capstone.txt names ("entry: ID" lines); none without
// the file. A line of the wrong form throws, naming it.
std::vector<std::string> capstone_ids() {
    std::vector<std::string> ids;
    if (!std::filesystem::exists(kCapstone)) return ids;
    for (const attn::course::NamedId& n : attn::course::parse_capstone_entries(
             attn::course::read_course_file(kCapstone, "the capstone's entries"), kCapstone))
        ids.push_back(n.id);
    return ids;
}

// The same, saying what is missing or wrong as a failed check.
std::vector<std::string> capstone_entries(Report& r) {
    if (!std::filesystem::exists(kCapstone)) {
        r.fail(kCapstone, std::string("not found: not written yet (docs/course/7-write-the-test.md says what it holds)"));
        return {};
    }
    std::vector<std::string> ids;
    try {
        ids = capstone_ids();
    } catch (const std::runtime_error& e) {
        r.fail(kCapstone, e.what());
        return {};
    }
    if (ids.empty())
        r.fail(kCapstone, "names no entry ('entry: ID'): not written yet");
    return ids;
}

// need: how many of the mistakes the checks must catch (write-test), or
// what share of them (capstone).
void grade_written_tests(Report& r, const Exercise& ex, bool capstone, double need,
                         const std::vector<std::string>& ids, uint64_t seed) {
    // What the entries lack (a property, a masked case) is said, and the
    // mistakes still run: the student sees which ones that lets through.
    int too_few = 0;
    for (const std::string& id : ids) {
        const Entry* e = find_entry(id);
        if (!e || e->cases.empty()) {
            r.fail("registry entry '" + id + "'", "no cases registered: not written yet");
            continue;
        }
        int masked = 0, properties = 0;
        for (const Case& c : e->cases) {
            masked += c.masking.empty() ? 0 : 1;
            properties += static_cast<int>(c.properties.size());
        }
        const std::string what = id + ": " + std::to_string(e->cases.size()) +
                                 (e->cases.size() == 1 ? " case, " : " cases, ") + std::to_string(masked) +
                                 " with a masked-key check, " + std::to_string(properties) + " properties";
        // (Not in a mistake's run, whose exit status says only whether the checks failed.)
        if (!g_checks_only) {
            if (capstone && e->number <= 80)
                ++too_few, r.fail(id, "is entry " + std::to_string(e->number) + " of the catalog: the capstone is a "
                                      "mechanism the catalog does not have, numbered 81 or more");
            if (properties == 0) ++too_few, r.fail(what, "declare at least one property the mechanism guarantees");
            else if (!capstone && masked == 0)
                ++too_few, r.fail(what, "the mechanism takes a key mask: check it (a KeySet)");
            else r.right(what);
        }
        uint64_t s = seed;
        for (const Case& c : e->cases) grade_case(r, *e, c, s++);
    }
    if (r.wrong > too_few || g_checks_only) {
        if (r.wrong > too_few)
            std::cout << "\n(your checks must pass on code that is right before they meet the mistakes)\n";
        return;
    }
    std::cout << "\nyour checks against code that is wrong: each mistake built into the library in turn\n";
    std::cout.flush();
    const std::string command = "python3 scripts/exercises.py mistakes " + ex.id + " 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) {
        r.fail("running " + command, "could not start it");
        return;
    }
    int caught = 0, total = 0;
    std::vector<std::string> missed;
    char buffer[4096];
    std::string printed;
    while (std::fgets(buffer, sizeof buffer, pipe)) {
        std::string line = buffer;
        if (!line.empty() && line.back() == '\n') line.pop_back();
        const size_t tab = line.find('\t');
        const std::string kind = line.substr(0, tab), words = tab == std::string::npos ? "" : line.substr(tab + 1);
        if (kind == "caught") ++caught, ++total, std::cout << "  caught  " << words << "\n";
        else if (kind == "missed") missed.push_back(words), ++total, std::cout << "  MISSED  " << words << "\n";
        else if (kind == "accepted") r.right("your checks accept a correct variant: " + words);
        else if (kind == "rejected")
            r.fail("your checks accept a correct variant: " + words,
                   "they fail on it, yet it is right: they ask for more than the formula (a tolerance too "
                   "tight, an order of operations)");
        else if (kind == "unbuilt") std::cout << "  (left out: " << words << ")\n";
        else if (kind == "equivalent")
            std::cout << "  (left out, the same as your code on every draw of its inputs: " << words << ")\n";
        else printed += line + "\n";
        std::cout.flush();
    }
    const int status = pclose(pipe);
    if (status != 0 || total == 0) {
        r.fail("building the mistakes", "scripts/exercises.py mistakes " + ex.id + " stopped:\n" + printed);
        return;
    }
    const int required = capstone ? static_cast<int>(std::ceil(need * total - 1e-9))
                                  : std::min(total, static_cast<int>(need));
    const std::string what = "your checks catch " + std::to_string(caught) + " of " + std::to_string(total) +
                             " mistakes (" + std::to_string(required) + " needed)";
    if (caught >= required) {
        r.right(what);
    } else {
        std::string detail = "these got through:";
        for (const std::string& m : missed) detail += "\n           - " + m;
        r.fail(what, detail);
    }
}

// ---- the AVX2 GEMM's micro-kernel: right, and fast ----------------------------------------------------
// Its products against the triple loop (gemm_reference) on shapes that end
// inside and on the edges of the 6×16 tile and of the cache blocks, every
// transpose, alpha and beta (beta = 0 with NaN in C: C must not be read);
// then its speed against the loop's on one core. The kernels are compiled
// at the library's -O2 in this build too (the Makefile), so the times are
// the real ones.
struct GemmShape {
    int64_t M, N, K;
    bool ta, tb;
    float alpha, beta;
    int64_t pad = 0;  // C's rows are N + pad apart: the pad columns must stay untouched
};

const std::vector<GemmShape>& gemm_shapes() {
    static const std::vector<GemmShape> shapes = {
        {6, 16, 8, false, false, 1, 0},    {1, 1, 1, false, false, 1, 0},     {7, 17, 5, false, false, 1, 0},
        {5, 9, 3, false, false, 1, 1},     {13, 31, 19, true, false, 1, 0},   {12, 33, 40, false, true, 0.5f, 2},
        {23, 40, 300, true, true, -1, 0},  {97, 200, 257, false, false, 1, 0.5f},
        {200, 190, 70, false, true, 1, 0}, {730, 48, 33, false, false, 1, 0},
        {11, 13, 9, false, false, 1, 1, 3}, {4, 7, 2, true, true, 2, 0, 5},
    };
    return shapes;
}

// How the library lays out A and B for the kernel (gemm_internal::set_packing):
// what it chooses by their sizes, both read in place (B's last row is then the
// end of B's memory), both packed.
const gemm_internal::Packing kPackings[] = {gemm_internal::Packing::by_size, gemm_internal::Packing::never,
                                            gemm_internal::Packing::always};
const char* packing_words(gemm_internal::Packing p) {
    return p == gemm_internal::Packing::never ? "A and B read in place"
           : p == gemm_internal::Packing::always ? "A and B packed" : "packed as the library chooses";
}

// A product on one shape: its inputs drawn from `seed`, A, B and C each
// against an unreadable page on `side`, the library's packing set to
// `packing`. C's N columns, row by row; a fault, or a write into C's
// padding, as words in *problem.
std::vector<float> gemm_product(GemmPath path, const GemmShape& g, uint64_t seed, std::string* problem = nullptr,
                                attn::course::GuardedFloats::Side side = attn::course::GuardedFloats::Side::end,
                                gemm_internal::Packing packing = gemm_internal::Packing::by_size) {
    using attn::course::GuardedFloats;
    Generator gen(seed);
    const int64_t ldc = g.N + g.pad;
    GuardedFloats A(static_cast<size_t>(g.M * g.K), side), B(static_cast<size_t>(g.K * g.N), side),
        C(static_cast<size_t>(g.M * ldc), side);
    for (size_t i = 0; i < A.size(); ++i) A.data()[i] = static_cast<float>(gen.normal());
    for (size_t i = 0; i < B.size(); ++i) B.data()[i] = static_cast<float>(gen.normal());
    for (int64_t i = 0; i < g.M * ldc; ++i) {
        const float drawn = static_cast<float>(gen.normal());
        const bool padding = i % ldc >= g.N;
        C.data()[i] = padding || g.beta == 0 ? std::numeric_limits<float>::quiet_NaN() : drawn;
    }
    gemm_internal::set_packing(packing);
    const attn::course::Fault fault = attn::course::run_catching_faults([&] {
        gemm_with(path, g.ta, g.tb, g.M, g.N, g.K, g.alpha, A.data(), g.ta ? g.M : g.K, B.data(), g.tb ? g.K : g.N,
                  g.beta, C.data(), ldc);
    });
    gemm_internal::set_packing(gemm_internal::Packing::by_size);
    std::vector<float> out;
    if (fault.happened) {
        std::string whose = "memory that is not A's, B's or C's";
        for (const auto& [name, buffer] : {std::pair<const char*, const GuardedFloats*>{"A", &A}, {"B", &B}, {"C", &C}})
            if (buffer->guards(fault.address)) whose = std::string(buffer->where(fault.address)) + " of " + name;
        const int64_t edge = g.N % 16;  // the AVX2 tile is 16 columns wide
        if (problem)
            *problem = std::string("your kernel ") + (fault.write ? "wrote " : "read ") + whose + " (" +
                       packing_words(packing) + (side == GuardedFloats::Side::end ? "; each matrix ending at" :
                                                 "; each matrix starting at") + " an unreadable page)" +
                       (edge ? ": N = " + std::to_string(g.N) + " leaves an edge tile of " + std::to_string(edge) +
                                   (edge == 1 ? " column" : " columns") + ", whose loads and stores must be masked"
                             : "");
        return out;
    }
    for (int64_t i = 0; i < g.M * ldc; ++i) {
        if (i % ldc < g.N) out.push_back(C.data()[i]);
        else if (!std::isnan(C.data()[i]) && problem && problem->empty())
            *problem = "your kernel wrote into C's padding: row " + std::to_string(i / ldc) + ", column " +
                       std::to_string(i % ldc) + " (C's rows are " + std::to_string(ldc) + " apart, N is " +
                       std::to_string(g.N) + ": a store past the last column of an edge tile)";
    }
    return out;
}

std::string gemm_label(const GemmShape& g) {
    std::ostringstream os;
    os << "C = " << g.alpha << "·" << (g.ta ? "Aᵀ" : "A") << "·" << (g.tb ? "Bᵀ" : "B") << " + " << g.beta << "·C, M "
       << g.M << ", N " << g.N << ", K " << g.K;
    if (g.pad) os << ", C's rows " << g.N + g.pad << " apart";
    return os.str();
}

// "" when the kernel's products on shape g are the triple loop's under every
// packing, with the matrices against unreadable pages on either side; else
// the first thing wrong, in words.
std::string gemm_shape_problem(const GemmShape& g, uint64_t seed) {
    const std::vector<float> want = gemm_product(GemmPath::reference, g, seed);
    // float sums of K terms in another order: a few ulps per term
    const double tolerance = 1e-5 * std::sqrt(static_cast<double>(g.K));
    for (const gemm_internal::Packing packing : kPackings)
        for (const auto side : {attn::course::GuardedFloats::Side::end, attn::course::GuardedFloats::Side::start}) {
            std::string problem;
            const std::vector<float> got = gemm_product(GemmPath::avx2, g, seed, &problem, side, packing);
            if (!problem.empty()) return problem;
            int64_t wrong = 0, first = -1;
            for (size_t k = 0; k < want.size(); ++k)
                if (!(std::fabs(got[k] - want[k]) <= tolerance * (1 + std::fabs(want[k]))) && wrong++ == 0)
                    first = static_cast<int64_t>(k);
            if (wrong > 0)
                return std::to_string(wrong) + " of " + std::to_string(want.size()) + " elements wrong (" +
                       packing_words(packing) + "); first at " + index_str(Shape{g.M, g.N}, first) + ": " +
                       attn::course::expected_got(want[static_cast<size_t>(first)], got[static_cast<size_t>(first)]);
        }
    return "";
}

// Seconds per product, the best of `runs`.
double time_product(GemmPath path, int64_t n, int runs) {
    std::vector<float> A(static_cast<size_t>(n * n), 0.5f), B(A), C(A);
    double best = 1e30;
    for (int r = 0; r < runs; ++r) {
        const auto start = std::chrono::steady_clock::now();
        gemm_with(path, false, false, n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f, C.data(), n);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return best;
}

// The machine's AVX2 peak on one core, measured: twelve independent chains of
// 8-wide FMAs (more than two FMA units of four cycles' latency keep busy, so
// no chain waits on another), the best of `runs` (only on a CPU with AVX2
// and FMA: grade_gemm asks gemm_path_supported first). A kernel is judged by its
// share of this: the same bar on every CPU. (Judged against the triple loop
// instead, the bar moved with the loop's memory traffic and with the load of
// the machine: a tile of plain loops passed a floor of 16× at 35×, and one
// kernel measured 16× and 39× in two runs.)
#if defined(__x86_64__)
double avx2_peak_gflops(int runs) {
    // In assembly: the grader is compiled without optimisation, where the
    // chains written in intrinsics would live in memory, not in registers.
    constexpr int64_t kIterations = 60'000;  // about 0.1 ms: as short as a product, so that a busy machine interrupts either as rarely
    double best = 0;
    for (int run = 0; run < runs; ++run) {
        int64_t left = kIterations;
        const auto start = std::chrono::steady_clock::now();
        asm volatile(
            "vxorps %%ymm0, %%ymm0, %%ymm0\n\tvxorps %%ymm1, %%ymm1, %%ymm1\n\tvxorps %%ymm2, %%ymm2, %%ymm2\n\t"
            "vxorps %%ymm3, %%ymm3, %%ymm3\n\tvxorps %%ymm4, %%ymm4, %%ymm4\n\tvxorps %%ymm5, %%ymm5, %%ymm5\n\t"
            "vxorps %%ymm6, %%ymm6, %%ymm6\n\tvxorps %%ymm7, %%ymm7, %%ymm7\n\tvxorps %%ymm8, %%ymm8, %%ymm8\n\t"
            "vxorps %%ymm9, %%ymm9, %%ymm9\n\tvxorps %%ymm10, %%ymm10, %%ymm10\n\tvxorps %%ymm11, %%ymm11, %%ymm11\n\t"
            "vxorps %%ymm12, %%ymm12, %%ymm12\n\tvxorps %%ymm13, %%ymm13, %%ymm13\n"
            "1:\n\t"
            "vfmadd231ps %%ymm12, %%ymm13, %%ymm0\n\tvfmadd231ps %%ymm12, %%ymm13, %%ymm1\n\t"
            "vfmadd231ps %%ymm12, %%ymm13, %%ymm2\n\tvfmadd231ps %%ymm12, %%ymm13, %%ymm3\n\t"
            "vfmadd231ps %%ymm12, %%ymm13, %%ymm4\n\tvfmadd231ps %%ymm12, %%ymm13, %%ymm5\n\t"
            "vfmadd231ps %%ymm12, %%ymm13, %%ymm6\n\tvfmadd231ps %%ymm12, %%ymm13, %%ymm7\n\t"
            "vfmadd231ps %%ymm12, %%ymm13, %%ymm8\n\tvfmadd231ps %%ymm12, %%ymm13, %%ymm9\n\t"
            "vfmadd231ps %%ymm12, %%ymm13, %%ymm10\n\tvfmadd231ps %%ymm12, %%ymm13, %%ymm11\n\t"
            "dec %0\n\tjnz 1b\n\t"
            "vzeroupper"
            : "+r"(left)
            :
            : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
              "xmm12", "xmm13", "cc");
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = std::max(best, 2.0 * 8 * 12 * static_cast<double>(kIterations) / seconds / 1e9);
    }
    return best;
}
#else
double avx2_peak_gflops(int) { return 0; }
#endif

void grade_gemm(Report& r, const Exercise& ex, uint64_t seed) {
    std::cout << "\nthe AVX2 micro-kernel (tensor/gemm/gemm_avx2.cpp), against the triple loop\n";
    if (!gemm_path_supported(GemmPath::avx2)) {
        r.fail("this machine", "has no AVX2 and FMA: the exercise needs an x86-64 CPU from 2013 on");
        return;
    }
    // One thread: an error the kernel throws then reaches this function (from
    // a pool worker it would end the program), and the timing is one core's.
    set_num_threads(1);
    for (size_t i = 0; i < gemm_shapes().size(); ++i) {
        const GemmShape& g = gemm_shapes()[i];
        try {
            const std::string problem = gemm_shape_problem(g, seed + i);
            if (problem.empty()) r.right(gemm_label(g), "packed and in place, against unreadable pages");
            else r.fail(gemm_label(g), problem);
        } catch (const std::exception& error) {
            r.fail(gemm_label(g), what_threw(error));
        }
    }
    // speed: the share of the machine's AVX2 peak to reach, in percent ("60%")
    const double target = ex.speed.empty() ? 0 : std::strtod(ex.speed.c_str(), nullptr);
    if (target <= 0) return;
    const int64_t n = 256;
    const double flops = 2.0 * n * n * n;
    // The peak and the kernel measured in turns, the best of each kept: a
    // moment the machine was busy slows one try, not the verdict.
    double peak = 0, yours = 1e30;
    try {
        for (int round = 0; round < 3; ++round) {
            peak = std::max(peak, avx2_peak_gflops(15));
            yours = std::min(yours, time_product(GemmPath::avx2, n, 15));
        }
    } catch (const std::exception& error) {
        r.fail("speed", what_threw(error), true);
        return;
    }
    const double gflops = flops / yours / 1e9, share = peak > 0 ? 100 * gflops / peak : 0;
    const std::string what = "speed, a 256×256×256 product on one core: at least " + num(target) +
                             "% of this core's AVX2 peak";
    const std::string measured = "yours " + num(gflops) + " GFLOP/s, " + num(share) + "% of the peak, " +
                                 num(peak) + " GFLOP/s (measured: twelve chains of FMAs)";
    if (share >= target) r.right(what, measured, /*timed=*/true);
    else r.fail(what, measured + " (docs/gemm.md: the tile held in registers, the k loop over packed panels)", true);
}

// ---- fingerprints: what a known mistake computes ----------------------------------------------------
// A few values of each output and of each input's gradient, at evenly spaced
// indices: enough to tell the mistakes of the mutation lists apart.
// A case that throws: a value standing for its error message (FNV-1a of
// the text, so that the same mistake gives the same value on any machine).
double error_mark(const std::string& message) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : message) h = (h ^ c) * 1099511628211ull;
    return 1e15 + static_cast<double>(h % 1000000007ull);
}

void sample(const Tensor& t, std::vector<double>& out) {
    const int64_t n = t.numel(), k = std::min<int64_t>(n, 8);
    for (int64_t i = 0; i < k; ++i) out.push_back(t[i * n / k]);
}

// The values f computes, appended to out, computed in a child process: a
// crash or a throw (a stub) leaves one value standing for its message.
void observe_in_child(const std::function<std::vector<double>()>& f, int seconds, std::vector<double>& out) {
    const ChildResult run = run_in_child(
        [&] {
            std::ostringstream os;
            os << std::setprecision(17);
            for (double v : f()) os << v << " ";
            return os.str();
        },
        seconds);
    if (!run.finished) {
        // how it ended, not where: a report's words name lines, which move with any edit
        out.push_back(error_mark(run.timed_out ? "timed out" : run.signal ? "signal " + std::to_string(run.signal)
                                 : !run.report.empty() ? "a sanitizer's report" : "exit " + std::to_string(run.exit_code)));
        return;
    }
    if (run.payload.rfind("threw", 0) == 0 || run.payload.rfind("not written", 0) == 0) {
        out.push_back(error_mark(run.payload));
        return;
    }
    std::istringstream in(run.payload);
    for (std::string token; in >> token;) out.push_back(std::strtod(token.c_str(), nullptr));
}

std::vector<double> observe(const Exercise& ex, uint64_t seed) {
    std::vector<double> out;
    for (const std::string& line : ex.grade) {
        std::istringstream words(line);
        std::string kind, name;
        words >> kind;
        if (kind == "entries") {
            while (words >> name) {
                const Entry* e = find_entry(name);
                if (!e) continue;
                uint64_t s = seed;
                for (const Case& c : e->cases) {
                    if (runs_the_fast_twin(c)) {
                        ++s;
                        continue;
                    }
                    // each case in a child of its own: a crash in one still leaves the others' values
                    observe_in_child([&, case_seed = s++]() {
                        std::vector<double> values;
                        const Prepared p(*e, c, case_seed);
                        std::vector<Var> x;
                        for (const Tensor& t : p.inputs) x.emplace_back(t, true);
                        const Outputs outs = p.run(x, c.masks);
                        Generator g(5);
                        Var loss;
                        for (const Named& o : outs) {
                            sample(o.value.value(), values);
                            if (!o.differentiable) continue;
                            const Var term = sum(o.value * Var(Tensor::normal(o.value.shape(), 0, 1, g)));
                            loss = loss.defined() ? loss + term : term;
                        }
                        if (loss.defined() && loss.requires_grad()) loss.backward();
                        for (const Var& v : x)
                            if (v.grad().defined()) sample(v.grad(), values);
                        return values;
                    }, 120, out);
                }
            }
        } else if (kind == "ops") {
            words >> name;
            int cases = 0;
            for (const OpCase& c : op_registry()) {
                if (c.op != name) continue;
                const uint64_t case_seed = seed + static_cast<uint64_t>(++cases);
                observe_in_child([&]() {
                    std::vector<double> values;
                    Generator gen(case_seed);
                    std::vector<Var> x;
                    for (const Tensor& t : sample_inputs(c, gen)) x.emplace_back(t, true);
                    Var y = c.build(x);
                    Generator w(1234);
                    y.backward(Tensor::normal(y.shape(), 0, 1, w));
                    for (const Var& v : x)
                        if (v.grad().defined()) sample(v.grad(), values);
                    return values;
                }, 60, out);
            }
        } else if (kind == "gemm") {
            set_num_threads(1);
            for (size_t i = 0; i < gemm_shapes().size(); ++i)
                observe_in_child([&]() {
                    std::vector<double> values;
                    const std::vector<float> c = gemm_product(GemmPath::avx2, gemm_shapes()[i], seed + i);
                    const size_t k = std::min<size_t>(c.size(), 8);
                    for (size_t j = 0; j < k; ++j) values.push_back(c[j * c.size() / k]);
                    return values;
                }, 60, out);
        } else if (kind == "checks") {
            words >> name;
            for (const Check& c : attn::course::named_checks(name, seed))
                if (c.observe) observe_in_child(c.observe, 30, out);
        } else if (kind == "engine") {
            // each graph in a child of its own: a crash on one still leaves the others' values
            for (const Check& c : engine_checks())
                if (c.observe) observe_in_child(c.observe, 10, out);
        }
    }
    return out;
}

// A mistake's fingerprint: its values, and which checks it fails (a
// mistake may compute the right values and still fail a check, e.g. one
// that makes backward() accept a freed graph).
struct Fingerprint {
    std::string exercise, mistake;
    std::vector<double> values;
    std::string outcomes;
};

std::vector<Fingerprint> read_fingerprints() {
    std::vector<Fingerprint> all;
    std::ifstream in(kFingerprints);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("exercise: ", 0) == 0) all.push_back({line.substr(10), "", {}, ""});
        else if (line.rfind("mistake: ", 0) == 0 && !all.empty()) all.back().mistake = line.substr(9);
        else if (line.rfind("checks: ", 0) == 0 && !all.empty()) all.back().outcomes = line.substr(8);
        else if (line.rfind("values:", 0) == 0 && !all.empty()) {
            std::istringstream v(line.substr(7));
            std::string token;
            while (v >> token) all.back().values.push_back(token == "nan" ? std::numeric_limits<double>::quiet_NaN()
                                                        : std::strtod(token.c_str(), nullptr));
        }
    }
    return all;
}

bool matches(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size() || a.empty()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (std::isnan(a[i]) || std::isnan(b[i])) {
            if (std::isnan(a[i]) != std::isnan(b[i])) return false;
            continue;
        }
        if (!(std::fabs(a[i] - b[i]) <= 1e-7 * (1 + std::fabs(b[i])))) return false;
    }
    return true;
}

// What the code in the tree computes on the grading cases (empty if it
// throws or crashes), computed in a child process.
std::vector<double> observed(const Exercise& ex) {
    const ChildResult run = run_in_child(
        [&] {
            std::ostringstream os;
            os << std::setprecision(17);
            for (double v : observe(ex, kFirstCaseSeed)) os << v << " ";
            return os.str();
        },
        60);
    std::vector<double> values;
    if (!run.finished || run.payload.rfind("threw", 0) == 0 || run.payload.rfind("not written", 0) == 0) return values;
    std::istringstream in(run.payload);
    std::string token;
    while (in >> token) values.push_back(std::strtod(token.c_str(), nullptr));
    return values;
}

// The known mistakes the code in the tree makes, by their words: the same
// checks wrong and the same values.
std::vector<std::string> known_mistakes(const Exercise& ex, const std::string& outcomes) {
    const std::vector<double> mine = observed(ex);
    std::vector<std::string> found;
    for (const Fingerprint& f : read_fingerprints())
        if (f.exercise == ex.id && f.outcomes == outcomes && matches(mine, f.values)) found.push_back(f.mistake);
    return found;
}

// ---- one exercise --------------------------------------------------------------------------------
struct Verdict {
    int checks = 0, wrong = 0;
    std::string outcomes;
    std::vector<std::string> mistakes;
};

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

// ---- progress (the student's tree) ------------------------------------------------------------------
// The exercises of course/assignment.txt (none without it), each checked
// against the list: an unknown one throws, naming its line and the known ones.
std::string known_ids(const std::vector<Exercise>& all) {
    std::string words;
    for (const Exercise& e : all) words += (words.empty() ? "" : ", ") + e.id;
    return words;
}

std::vector<std::string> assigned(const std::vector<Exercise>& all) {
    std::vector<std::string> ids;
    if (!std::filesystem::exists(kAssignment)) return ids;
    for (const attn::course::NamedId& n : attn::course::parse_assignment(
             attn::course::read_course_file(kAssignment, "the exercises of this tree"), kAssignment)) {
        if (!attn::course::find_exercise(all, n.id))
            throw std::runtime_error(std::string(kAssignment) + ":" + std::to_string(n.line) + ": no exercise '" + n.id +
                                     "' in " + kExerciseList + " (the exercises: " + known_ids(all) + ")");
        ids.push_back(n.id);
    }
    return ids;
}

// Adds the attempt's line to course/progress.txt (atomically:
// course/course_files.hpp). A file that cannot be read or written, or whose
// lines are not the grader's, is left alone, and the line is printed.
void record_attempt(const Exercise& ex, const Verdict& v) {
    const std::time_t now = std::time(nullptr);
    char when[32];
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M", std::localtime(&now));
    attn::course::Attempt a;
    a.when = when;
    a.id = ex.id;
    a.right = v.wrong == 0 && v.checks > 0;
    a.right_checks = v.checks - v.wrong;
    a.checks = v.checks;
    for (std::string m : v.mistakes) {
        for (char& c : m)
            if (c == '\t' || c == '\n' || c == '\r') c = ' ';
        if (!m.empty()) a.mistakes.push_back(m);
    }
    try {
        attn::course::record_attempt(kProgress, a);
    } catch (const std::exception& e) {
        std::cout << "(this attempt is not recorded: " << e.what() << ".\nMove " << kProgress
                  << " away and grade again, or add this line to it yourself:\n" << attn::course::progress_line(a) << "\n)\n";
    }
}

std::string html_escape(const std::string& s) {
    std::string out;
    for (const char c : s) {
        if (c == '<') out += "&lt;";
        else if (c == '>') out += "&gt;";
        else if (c == '&') out += "&amp;";
        else if (c == '"') out += "&quot;";
        else out += c;
    }
    return out;
}

// build/course/progress.html: the course's exercises in order with their
// status, the mistakes met on the way, and the model trained on the
// student's code (exercise 6.1) with its attention. A page of its own, read
// from the files (course/progress.txt, build/course/trainer/), nothing served.
void write_progress_page(const std::vector<Exercise>& all, const std::vector<std::string>& ids,
                         const std::map<std::string, int>& attempts, const std::map<std::string, std::string>& last,
                         const std::map<std::string, std::string>& best,
                         const std::map<std::string, std::vector<std::string>>& mistakes) {
    const std::string dir = "build/course", page = dir + "/progress.html";
    std::filesystem::create_directories(dir);
    std::ofstream out(page);
    int done = 0;
    for (const std::string& id : ids) done += best.count(id) ? 1 : 0;
    out << "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Your course</title>\n"
        << "<style>body{font:15px/1.45 system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em}"
        << "table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3em .5em;"
        << "text-align:left;vertical-align:top}.done{color:#1a7f37;font-weight:600}.progress{color:#9a6700}"
        << ".todo{color:#777}.mistake{color:#a40e26;font-size:90%}img{max-width:100%;border:1px solid #eee;"
        << "margin:.5em 0}</style></head><body>\n"
        << "<h1>Your course</h1>\n<p>" << done << " of " << ids.size()
        << " exercises done. The course, in order: <a href=\"../../docs/course/README.md\">docs/course/</a>. "
        << "Made by <code>make progress</code> from <code>course/progress.txt</code>, where every "
        << "<code>make grade</code> adds a line.</p>\n"
        << "<table><tr><th>ex</th><th>exercise</th><th>status</th><th>attempts</th><th>last graded</th></tr>\n";
    for (const std::string& id : ids) {
        const Exercise* e = attn::course::find_exercise(all, id);
        if (!e) continue;
        const bool is_done = best.count(id) > 0, started = attempts.count(id) > 0;
        const std::string link = e->read.empty() ? "" : "../../" + e->read[0];
        out << "<tr><td>" << e->number << "</td><td>";
        if (!link.empty()) out << "<a href=\"" << html_escape(link) << "\">" << html_escape(e->title) << "</a>";
        else out << html_escape(e->title);
        out << " <code>" << id << "</code>";
        if (const auto m = mistakes.find(id); m != mistakes.end())
            for (const std::string& words : m->second) out << "<div class=\"mistake\">mistake met: " << html_escape(words) << "</div>";
        out << "</td><td class=\"" << (is_done ? "done\">done" : started ? "progress\">in progress" : "todo\">not started")
            << "</td><td>" << (started ? attempts.at(id) : 0) << "</td><td>" << (last.count(id) ? last.at(id) : "-")
            << "</td></tr>\n";
    }
    out << "</table>\n<h2>Your model's attention</h2>\n";
    const std::string trainer = dir + "/trainer";
    std::string test_line;
    {
        std::ifstream log(trainer + "/train.log");
        for (std::string line; std::getline(log, line);)
            if (line.rfind("test: ", 0) == 0) test_line = line;
    }
    if (test_line.empty()) {
        out << "<p>Not trained yet: <code>make grade EX=train_dates</code> trains the date translator on your code "
            << "(exercise 6.1).</p>\n";
    } else {
        out << "<p>The date translator trained on your code by exercise 6.1: <b>" << html_escape(test_line)
            << "</b>. Every row of a picture is one output symbol, every column one input character; the brighter "
            << "(yellow), the more weight, dark purple none, as the colour bar beside each picture says. The whole report, with the learning curves and an explorer of every step: "
            << "<a href=\"trainer/report.html\">trainer/report.html</a>.</p>\n";
        for (int k = 0; k < 8; ++k) {
            const std::string svg = "trainer/seq2seq/attention_" + std::to_string(k) + ".svg";
            if (std::filesystem::exists(dir + "/" + svg)) out << "<img src=\"" << svg << "\" alt=\"attention\">\n";
        }
    }
    out << "</body></html>\n";
    std::cout << "\nThe same, with your model's attention: " << page << "\n";
}

int show_progress(const std::vector<Exercise>& all) {
    std::map<std::string, int> attempts;
    std::map<std::string, std::string> last, best;
    std::map<std::string, std::vector<std::string>> mistakes;
    std::vector<attn::course::Attempt> tried;
    if (std::filesystem::exists(kProgress) || std::filesystem::is_symlink(kProgress))
        try {
            tried = attn::course::parse_progress(attn::course::read_course_file(kProgress, "your attempts"), kProgress);
        } catch (const std::runtime_error& e) {
            throw std::runtime_error(std::string(e.what()) + "; move " + kProgress +
                                     " away (the next make grade starts a new one)");
        }
    for (const attn::course::Attempt& a : tried) {
        ++attempts[a.id];
        last[a.id] = a.when;
        if (a.right) best[a.id] = "done";
        for (const std::string& m : a.mistakes) {
            bool seen = false;
            for (const std::string& known : mistakes[a.id]) seen = seen || known == m;
            if (!seen) mistakes[a.id].push_back(m);
        }
    }
    std::vector<std::string> ids = assigned(all);
    if (ids.empty())
        for (const Exercise& e : all) ids.push_back(e.id);
    std::cout << std::left << std::setw(6) << "ex" << std::setw(22) << "id" << std::setw(13) << "status"
              << std::setw(10) << "attempts" << "last graded\n";
    for (const std::string& id : ids) {
        const Exercise* e = attn::course::find_exercise(all, id);
        if (!e) continue;
        const std::string status = best.count(id) ? "done" : attempts.count(id) ? "in progress" : "not started";
        std::cout << std::setw(6) << e->number << std::setw(22) << id << std::setw(13) << status << std::setw(10)
                  << attempts[id] << (last.count(id) ? last[id] : "-") << "\n";
        for (const std::string& m : mistakes[id]) std::cout << "        mistake met: " << m << "\n";
    }
    write_progress_page(all, ids, attempts, last, best, mistakes);
    return 0;
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
            if (line.rfind("trainer", 0) == 0 && !trainer_built) g_trainer_build_problem = build_trainer(), trainer_built = true;
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
