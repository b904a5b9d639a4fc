// The gradient checker: every analytic gradient against central differences.
//
// For an op f and inputs x, the output is reduced to a scalar with fixed
// random weights, L = Σ w ⊙ f(x), so every element of the output counts. Then
// for every element x_i of every input:
//
//     analytic  ∂L/∂x_i  from backward()
//     numeric   (L(x_i + ε) − L(x_i − ε)) / 2ε
//
// and the check fails unless |analytic − numeric| ≤ atol + rtol·max(|analytic|, |numeric|).
// Run it in the double build (tests/grad/, -DATTN_DOUBLE): with float's 7
// digits the central difference is too noisy to be a fair judge. Choose inputs
// away from kinks (relu and abs at 0, ties of max): there the derivative is
// one-sided and the difference quotient straddles it.
//
// On failure the message names the op, the input, the flat index and both
// values, e.g.
//   gradcheck mul: input 1 (shape 2×3), flat index 4: analytic 0.5123, numeric 0.4987 (|difference| 0.0136 > 1.0e-05)
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "autograd/function_ref.hpp"
#include "autograd/variable.hpp"

namespace attn {

struct GradcheckOptions {
    // Defaults for the double build; the float build gets rough ones.
    double eps = std::is_same_v<real, double> ? 1e-6 : 1e-2;
    double atol = std::is_same_v<real, double> ? 1e-6 : 1e-2;
    double rtol = std::is_same_v<real, double> ? 1e-5 : 5e-2;
    uint64_t seed = 1234;  // for the weights w
    // false: stop at the first wrong derivative (the tests). true: compare
    // every element of every input and fill `tensors` (a student's table).
    bool every_element = false;
    // 0: difference every element of every input. n > 0: at most n of each
    // input, spread evenly over it, its first and last element included: for
    // an input of thousands of elements (an attention over 130 keys, to
    // cross a kernel's 128-wide tiles), whose every element would cost two
    // runs of the whole op, when a smaller case already differences them all.
    int64_t max_per_input = 0;
};

// What the check found in one input, for a table: how many derivatives were
// compared and how many were wrong, the largest relative error
// |a − n| / max(|a|, |n|) (0 where both are 0), and the first wrong one.
struct GradcheckTensor {
    Shape shape;
    int64_t checked = 0, wrong = 0;
    double worst_relative = 0;
    int64_t first_wrong = -1;  // flat index, −1 when none
    double analytic = 0, numeric = 0;  // at first_wrong
};

struct GradcheckResult {
    bool ok = true;
    std::string message;  // empty when ok; else the first failure
    int64_t checked = 0;  // how many derivatives were compared
    std::vector<GradcheckTensor> tensors;  // one per input, with every_element only
    explicit operator bool() const { return ok; }
};

// f builds the op from leaf variables made from `inputs`, each requiring a
// gradient. Non-differentiable arguments (index tensors, masks) live in f.
GradcheckResult gradcheck(const std::string& name, FunctionRef<Var(const std::vector<Var>&)> f,
                          const std::vector<Tensor>& inputs, const GradcheckOptions& options = {});

// The same for variables that already exist (a layer's parameters): each is
// perturbed in place and restored, f recomputes the output from them, and
// their gradients are restored afterwards.
GradcheckResult gradcheck(const std::string& name, FunctionRef<Var()> f, const std::vector<Var>& params,
                          const GradcheckOptions& options = {});

}  // namespace attn
