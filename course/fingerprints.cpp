// Fingerprints: what a known mistake computes (course/fingerprints.hpp).
// A few values of each output and of each input's gradient, at evenly spaced
// indices: enough to tell the mistakes of the mutation lists apart. Each
// grade kind whose values tell mistakes apart has its branch in observe():
// the same cases as its grading (course/grade_kinds.hpp), at the same seeds.
#include "course/fingerprints.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/ops.hpp"
#include "course/checks.hpp"
#include "course/child.hpp"
#include "course/grade_kinds.hpp"
#include "course/report.hpp"
#include "tensor/parallel.hpp"
#include "tensor/random.hpp"
#include "tests/grad/catalog_checks.hpp"
#include "tests/grad/registry.hpp"

using namespace attn::testing;

namespace attn::course::grading {
namespace {

// A case that throws: a value standing for its error message (FNV-1a of
// the text, so that the same mistake gives the same value on any machine).
double error_mark(const std::string& message) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : message) h = (h ^ c) * 1099511628211ull;
    return 1e15 + static_cast<double>(h % 1000000007ull);
}

// Up to 8 of t's values, evenly spaced.
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

// The values the code in the tree computes on the exercise's grading cases,
// kind by kind (course/grade_kinds.hpp), each case in a child of its own.
// (A trainer, write-test or capstone line adds none.)
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
            for (size_t i = 0; i < gemm_shape_count(); ++i)
                observe_in_child([&]() {
                    std::vector<double> values;
                    const std::vector<float> c = gemm_kernel_product(i, seed + i);
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

}  // namespace

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

}  // namespace attn::course::grading
