// The catalog registry: every mechanism of the attention catalog as one entry
// (its number, its id and its cases), in the spirit of PyTorch's OpInfo. A
// case holds everything the generic tests of test_catalog.cpp need:
//
//   make        builds the module on random parameters (nullptr only when the
//               mechanism has none: a parameter made inside `run` is an error)
//   run         runs it on the sample inputs and returns its named outputs
//   reference   the catalog's formula written again in plain loops
//               (tests/grad/reference.hpp), reading the module's parameters by
//               their names and PyTorch layouts, sharing nothing with attention/
//   masking     which inputs each key mask covers, and which weights it zeroes
//   properties  the catalog's "Test:" line, checked on the case's inputs
//
// and the generic tests iterate over all of them, in the double build:
//   1. every output equals the reference (parameters randomised first, so no
//      weight is zero or the identity unless the case says so);
//   2. finite-difference gradients to every input and every parameter;
//   3. a masked key changes nothing; a fully masked example gets zero weights
//      and zero gradient;
//   4. the declared properties.
//
// Adding a mechanism (coursework included): write it in attention/, its
// reference and its entry in the tests/grad/ file of its family:
//
//     const RegisterEntry cosine_with_temperature(82, "cosine_temperature_score", {{
//         .variant = "3 queries, 4 keys of 5",
//         .inputs = {Shape{2, 3, 5}, Shape{2, 4, 5}},
//         .make = [](Generator& g) { return std::make_unique<MyScore>(g); },
//         .run = [](Module* m, In x, Masks) { return Outputs{{"scores", as<MyScore>(m).score(x[0], x[1])}}; },
//         .reference = [](const Ref& r) { ... plain loops over r.x[0], r.x[1], r.p["tau"] ... },
//     }});
//
// ATTN_MECHANISM=id[,id...] build/tests/grad runs the entries named.
// docs/extending.md walks through a complete example.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "autograd/ops.hpp"
#include "nn/module.hpp"
#include "tests/function.hpp"
#include "tests/grad/reference.hpp"

namespace attn::testing {

// ---- what a case runs ------------------------------------------------------------------
// One output of a mechanism, by name ("output", "weights", "scores", ...).
struct Named {
    std::string name;
    Var value;
    // false for what has no gradient by construction (a sampled index, a
    // hard one-hot): compared with the reference, left out of the gradient check.
    bool differentiable = true;
};
using Outputs = std::vector<Named>;

using In = const std::vector<Var>&;
using Masks = const std::vector<Tensor>&;
using Make = Function<std::unique_ptr<Module>(Generator&)>;
using Run = Function<Outputs(Module*, In, Masks)>;

// ---- what a reference sees ---------------------------------------------------------------
// The module's parameters (and buffers), read by name: p["W_1"] is an Array
// in the module's PyTorch layout (out×in for a weight). Throws, listing the
// names there are, if the name is not a parameter.
class Params {
public:
    explicit Params(const Module* module) : module_(module) {}
    Array operator[](const std::string& name) const;

private:
    const Module* module_;
};

struct Ref {
    const std::vector<Array>& x;      // the inputs, in the case's order
    const std::vector<Array>& masks;  // the case's keep masks (1 = may attend)
    Params p;                         // the module's parameters
    Generator& noise;                 // seeded like the run's generator: replays its draws
    bool training;                    // the module's mode
};
// r.masks[i], or an empty Array (keep everything) when the case has fewer masks.
Array mask_or_all(const Ref& r, size_t i);
// The reference's outputs: the same names as the run's, the same shapes.
struct Expected {
    std::string name;
    Array value;
};
using Reference = Function<std::vector<Expected>(const Ref&)>;

// ---- masking (generic test 3) ------------------------------------------------------------
// A key mask of the case: masks[mask] is a B×n keep mask over the rows (axis 1)
// of inputs[...]; the outputs named in `weights` have these n keys on their
// last axis and must be exactly 0 where the mask is 0. `zero_when_empty`
// names outputs that must be all zeros for an example whose keys are all masked.
// In self-attention the keys are also the queries: `self` leaves the masked
// position's own query out of "changes nothing" (its output row moves with
// its input), and out of "zero gradient" (a residual path reaches it).
struct KeySet {
    int mask = 0;
    std::vector<int> inputs;
    std::vector<std::string> weights;
    std::vector<std::string> zero_when_empty = {};
    bool self = false;
    // Non-empty: the masked rows are changed by random values only, not set to
    // NaN or inf, for the reason given (printed when the test runs).
    std::string finite_only = {};
};

// ---- properties (generic test 4) ---------------------------------------------------------
// Evaluates the case's module on other inputs or masks: the outputs by name.
struct Evaluation {
    std::vector<Named> outputs;
    const Tensor& operator[](const std::string& name) const;
};
struct PropertyContext {
    Module* module;
    const std::vector<Tensor>& inputs;
    const std::vector<Tensor>& masks;
    Function<Evaluation(const std::vector<Tensor>& inputs, const std::vector<Tensor>& masks)> run;
};
struct Property {
    std::string name;
    // "" when the property holds, else what failed (with indices and values).
    Function<std::string(const PropertyContext&)> check;
};

// Ready-made properties (catalog.cpp); a case may also write its own.
// Every row of `weights` (last axis) sums to 1, or to 0 where every key is masked.
Property rows_sum_to_one(const std::string& weights);
// Every column (axis −2) sums to 1, e.g. multi-dimensional attention's B×n×d weights.
Property columns_sum_to_one(const std::string& weights);
// Every element of the output lies in [lo, hi].
Property bounded(const std::string& output, double lo, double hi);
// Reversing the rows (axis 1) of `permuted` inputs, and of `permuted_masks`,
// leaves `unchanged` outputs as they were.
Property permutation_invariant(std::vector<int> permuted, std::vector<int> permuted_masks,
                               std::vector<std::string> unchanged);
// Reversing the rows of `permuted` inputs (and masks) reverses `outputs` along
// their axis 1 and `weights` along their last axis.
Property permutation_equivariant_keys(std::vector<int> permuted, std::vector<int> permuted_masks,
                                      std::vector<std::string> weights);
// Every coordinate of output[b, ..., i, :] lies between the min and max of
// that column over the unmasked rows of values[b] (a convex combination).
Property convex_combination(const std::string& output, int values, int mask = -1);
// Changing input `changed` leaves `unchanged` outputs exactly as they were.
Property independent_of(int changed, std::vector<std::string> unchanged);
// Input `input` made one column wider (zeros) is refused with a
// std::invalid_argument (any std::logic_error), never run: `name` says which
// input it is ("values").
Property refuses_wider(int input, std::string name);

// ---- cases and entries ---------------------------------------------------------------------
// How inputs are drawn: N(0, 1) unless the case needs positive values or the like.
using Draw = Function<std::vector<Tensor>(Generator&)>;

struct Case {
    std::string variant;           // what this case exercises, e.g. "d_q 3 ≠ d_k 4, a padding mask"
    std::vector<Shape> inputs;     // drawn from N(0, 1) (unless `draw` is set)
    std::vector<Tensor> masks = {};  // keep masks passed to run and reference
    Make make = nullptr;
    Run run;
    Reference reference;
    std::vector<KeySet> masking = {};
    std::vector<Property> properties = {};
    Draw draw = nullptr;           // draws the inputs itself (shapes must match `inputs`)
    bool training = false;         // run in training mode (dropout, sampling, ...)
    // The module's generator is reseeded with this before every run, and the
    // reference gets one seeded the same: stochastic mechanisms replay their noise.
    uint64_t noise_seed = 7;
    // Randomise the parameters (p ← p + 0.5·N(0, 1)) before every check, so no
    // weight is zero or the identity. A case about a special value sets false.
    bool randomize_parameters = true;
    bool check_gradient = true;    // false only where the output is piecewise constant
    // 0: the gradient check differences every element of every input and
    // parameter. n: at most n of each, spread evenly (GradcheckOptions::
    // max_per_input), for a case of large shapes whose every element another
    // case of the same entry already differences on small ones.
    int64_t max_differences = 0;
    double atol = 1e-9, rtol = 1e-9;
};

struct Entry {
    int number = 0;  // the catalog number; > 80 for entries added in coursework
    std::string id;
    std::vector<Case> cases;
};

const std::vector<Entry>& catalog_registry();
// An entry by id (its cases from every file that registered some), or nullptr.
const Entry* find_entry(const std::string& id);

// A static object of this type adds the cases of one entry at start-up; the
// same id may be registered from several files.
struct RegisterEntry {
    RegisterEntry(int number, std::string id, std::vector<Case> cases);
};

// The module make() built, as its own type.
template <class M>
M& as(Module* m) {
    return *static_cast<M*>(m);
}

// A B×n keep mask from lengths: row b keeps its first lengths[b] positions.
Tensor keep_first(const std::vector<int64_t>& lengths, int64_t n);

}  // namespace attn::testing
