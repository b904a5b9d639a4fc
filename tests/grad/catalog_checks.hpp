// The four generic checks of the catalog registry as functions that report
// what they found instead of asserting it, so that two readers share them:
// the tests (tests/grad/test_catalog.cpp turns each finding into a failed
// check) and the coursework grader (course/grade.cpp prints them for a
// student: how many elements are wrong, where the first is, a table of
// gradients).
//
//   1. values     every output against the entry's independent reference
//   2. gradients  finite differences to every input and every parameter
//   3. masking    a masked key changes nothing, whatever it holds; an example
//                 with every key masked gets zero weights and zero gradient
//   4. properties the case's declared properties
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "autograd/gradcheck.hpp"
#include "tests/grad/catalog.hpp"

namespace attn::testing {

// One case, ready to run: its generator (which the module may keep for its
// noise), its module on randomised parameters, its inputs drawn from `seed`.
struct Prepared {
    const Case& c;
    std::string name;  // "id (variant)"
    std::unique_ptr<Generator> gen;
    std::unique_ptr<Module> module;
    std::vector<Tensor> inputs;

    Prepared(const Entry& e, const Case& c_, uint64_t seed);
    // Runs the case on variables (the noise reseeded, so every run draws the same).
    Outputs run(const std::vector<Var>& x, const std::vector<Tensor>& masks) const;
    Evaluation evaluate(const std::vector<Tensor>& x, const std::vector<Tensor>& masks) const;
};

// The seed of an entry's first case (1000, then 1001, ...), as the tests draw
// them; the grader's hidden checks draw from others.
constexpr uint64_t kFirstCaseSeed = 1000;

// "[0, 2, 1]": a flat index of `shape` as one index per axis.
std::string index_str(const Shape& shape, int64_t flat);

// ---- 1. values ------------------------------------------------------------------------------
struct ValueFinding {
    std::string output;    // its name: "output", "weights", ...
    std::string problem;   // a missing output or a shape that differs; "" otherwise
    Shape shape;
    int64_t total = 0, wrong = 0;
    int64_t first = -1;    // flat index of the first wrong element
    double expected = 0, got = 0;
    bool ok() const { return problem.empty() && wrong == 0; }
};
// One finding per output of the case (and one per name only one side gives).
std::vector<ValueFinding> check_values(const Prepared& p);

// ---- 2. gradients ---------------------------------------------------------------------------
struct GradientFindings {
    // A trainable tensor the registry cannot see (built inside run), else "".
    std::string problem;
    bool checked = false;  // false where the case has no gradient by construction
    GradcheckResult inputs, parameters;
    std::vector<std::string> parameter_names;  // the order of parameters.tensors
    bool ok() const { return problem.empty() && inputs.ok && parameters.ok; }
};
// every_element: every derivative compared and each tensor's table filled
// (the grader); else each check stops at its first wrong derivative.
GradientFindings check_gradients(const Prepared& p, bool every_element);

// ---- 3. masking -------------------------------------------------------------------------------
// What went wrong, one sentence each (empty: nothing); `notes` gets what was
// left out and why (a case whose masked rows are never set to NaN).
std::vector<std::string> check_masking(const Prepared& p, std::vector<std::string>* notes = nullptr);

// ---- 4. properties ------------------------------------------------------------------------------
struct PropertyFinding {
    std::string name;
    std::string error;  // "" when it holds
};
std::vector<PropertyFinding> check_properties(const Prepared& p);

}  // namespace attn::testing
