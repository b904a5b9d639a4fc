// The attention registry: every mechanism of the catalog as one or more test
// cases (catalog id, what the case exercises, input shapes, how to build the
// module, how to run it). test_attention_grad.cpp loops over it and checks
// the gradient of every case with respect to its inputs and its parameters,
// in the double build.
//
// Adding a mechanism (e.g. in coursework): write it in attention/, then add
// its cases in the tests/grad/ file of its family with
//
//     static RegisterMechanisms cases({
//         {"my_score", "2 queries, 3 keys", {Shape{2, 2, 4}, Shape{2, 3, 4}}, nullptr,
//          [](Module*, const std::vector<Var>& x) { return MyScore().score(x[0], x[1]); }},
//     });
//
// ATTN_MECHANISM=id build/tests/grad runs the cases of one mechanism.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "attention/general.hpp"
#include "autograd/ops.hpp"
#include "nn/module.hpp"

namespace attn::testing {

struct MechanismCase {
    std::string id;       // the catalog id
    std::string variant;  // what this case exercises, e.g. "with a padding mask"
    std::vector<Shape> input_shapes;  // inputs are drawn from N(0, 1)
    // Builds the module whose parameters are checked (nullptr: no parameters).
    std::function<std::unique_ptr<Module>(Generator&)> make;
    // Runs the mechanism on the inputs and returns what to check: usually the
    // output, or concat of output and weights when both are differentiable.
    std::function<Var(Module*, const std::vector<Var>&)> run;
};

std::vector<MechanismCase>& mechanism_registry();

// A static object of this type adds cases at start-up.
struct RegisterMechanisms {
    explicit RegisterMechanisms(std::vector<MechanismCase> cases);
};

// Helpers for the cases' run functions.
// The module a case's make() built, as its own type.
template <class M>
M& as(Module* m) {
    return *static_cast<M*>(m);
}
// Every element in one vector.
inline Var flat(const Var& x) { return reshape(x, {-1}); }
// Output and weights in one vector, so one check covers both.
inline Var both(const Var& output, const Var& weights) { return concat({flat(output), flat(weights)}, 0); }
inline Var both(const AttentionOutput& o) { return both(o.output, o.weights); }

}  // namespace attn::testing
