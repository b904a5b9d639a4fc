// Every op of the registry against central finite differences (double build),
// the gradient checker itself, and the fused ops against their composite twins.
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "autograd/gradcheck.hpp"
#include "autograd/ops.hpp"
#include "autograd/record.hpp"
#include "tensor/ops.hpp"
#include "tests/function.hpp"
#include "tests/grad/registry.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

TEST_CASE("gradcheck: every registered op, on every sample (ATTN_OP=name runs one op)") {
    const char* only = std::getenv("ATTN_OP");
    std::map<std::string, int> cases_per_op;
    Generator gen(2024);
    for (const OpCase& c : op_registry()) {
        if (only && c.op != only) continue;
        const std::vector<Tensor> inputs = sample_inputs(c, gen);
        const GradcheckResult r = gradcheck(c.op + " [" + c.variant + "]", c.build, inputs);
        INFO(r.message);
        CHECK_MESSAGE(r.ok, c.op, " [", c.variant, "]");
        CHECK(r.checked > 0);
        ++cases_per_op[c.op];
    }
    if (!only) {
        CHECK(cases_per_op.size() >= 50);
        for (const char* op : {"add", "mul", "matmul", "softmax", "cross_entropy", "conv2d", "max_pool2d"}) {
            INFO(op);
            CHECK(cases_per_op[op] >= 2);  // several shapes each
        }
    }
}

TEST_CASE("gradcheck: a wrong derivative is caught, naming the op, input, index and values") {
    // z = a·b with a backward that forgets the factor b for input 0.
    auto bad_mul = [](const std::vector<Var>& x) {
        return record("bad_mul", mul(x[0].value(), x[1].value()), {x[0], x[1]}, [a = x[0].value()](Backward& bw) {
            bw.accumulate(0, bw.grad());  // should be g·b
            bw.accumulate(1, mul(bw.grad(), a));
        });
    };
    const Tensor a = Tensor::from({1, 2, 3}), b = Tensor::from({2, 2, 2});
    const GradcheckResult r = gradcheck("bad_mul", bad_mul, {a, b});
    CHECK_FALSE(r.ok);
    CHECK(r.message.find("gradcheck bad_mul: input 0 (shape 3), flat index 0") == 0);
    CHECK(r.message.find("analytic") != std::string::npos);
    CHECK(r.message.find("numeric") != std::string::npos);
    INFO(r.message);

    // An op whose result was not recorded is caught too.
    const GradcheckResult unrecorded =
        gradcheck("detached", [](const std::vector<Var>& x) { return x[0].detach(); }, {a});
    CHECK_FALSE(unrecorded.ok);
    CHECK(unrecorded.message == "gradcheck detached: the output does not require a gradient (was the op recorded?)");
}

TEST_CASE("gradcheck: every_element gives each input's table: compared, wrong, worst relative error, first wrong") {
    // z = a·b with ∂z/∂a given as 1 instead of b = 2: every derivative to a is
    // half the true one, so all 3 are wrong with relative error exactly
    // |g − 2g| / |2g| = 0.5; every derivative to b is right.
    auto bad_mul = [](const std::vector<Var>& x) {
        return record("bad_mul", mul(x[0].value(), x[1].value()), {x[0], x[1]}, [a = x[0].value()](Backward& bw) {
            bw.accumulate(0, bw.grad());
            bw.accumulate(1, mul(bw.grad(), a));
        });
    };
    const Tensor a = Tensor::from({1, 2, 3}), b = Tensor::from({2, 2, 2});
    GradcheckOptions every;
    every.every_element = true;
    const GradcheckResult r = gradcheck("bad_mul", bad_mul, {a, b}, every);
    CHECK_FALSE(r.ok);
    CHECK(r.checked == 6);
    REQUIRE(r.tensors.size() == 2);
    CHECK(r.tensors[0].shape == Shape{3});
    CHECK(r.tensors[0].checked == 3);
    CHECK(r.tensors[0].wrong == 3);
    CHECK(r.tensors[0].first_wrong == 0);
    CHECK(r.tensors[0].worst_relative == doctest::Approx(0.5).epsilon(1e-6));
    CHECK(r.tensors[0].numeric == doctest::Approx(2 * r.tensors[0].analytic).epsilon(1e-6));
    CHECK(r.tensors[1].checked == 3);
    CHECK(r.tensors[1].wrong == 0);
    CHECK(r.tensors[1].first_wrong == -1);
    CHECK(r.tensors[1].worst_relative < 1e-6);
    // The default stops at the first wrong derivative and keeps no table.
    const GradcheckResult first = gradcheck("bad_mul", bad_mul, {a, b});
    CHECK(first.checked == 1);
    CHECK(first.tensors.empty());
    CHECK(first.message == r.message);
}

TEST_CASE("gradcheck: max_per_input differences that many elements, spread from the first to the last") {
    // z = 2x, whose backward is wrong (3 instead of 2) at one flat index of
    // the 10. With max_per_input = 4 the check differences elements 0, 3, 6
    // and 9 (k·9/3): a wrong derivative at 5 is not looked at, at 6 or at 9
    // (the last) it is found.
    auto wrong_at = [](int64_t bad) {
        return [bad](const std::vector<Var>& x) {
            return record("wrong_at", mul(x[0].value(), Tensor::full(x[0].shape(), 2)), {x[0]}, [bad](Backward& bw) {
                Tensor slope = Tensor::full(bw.grad().shape(), 2);
                slope[bad] = 3;
                bw.accumulate(0, mul(bw.grad(), slope));
            });
        };
    };
    Generator gen(5);
    const Tensor x = Tensor::normal(Shape{10}, 0, 1, gen);
    GradcheckOptions four;
    four.max_per_input = 4;
    const GradcheckResult skipped = gradcheck("wrong_at", wrong_at(5), {x}, four);
    CHECK(skipped.ok);
    CHECK(skipped.checked == 4);
    for (const int64_t bad : {0, 3, 6, 9}) {
        CAPTURE(bad);
        const GradcheckResult found = gradcheck("wrong_at", wrong_at(bad), {x}, four);
        CHECK_FALSE(found.ok);
        CHECK(found.message.find("flat index " + std::to_string(bad) + ":") != std::string::npos);
    }
    // every element by default, and when the input has no more than the limit
    CHECK_FALSE(gradcheck("wrong_at", wrong_at(5), {x}).ok);
    four.max_per_input = 10;
    CHECK_FALSE(gradcheck("wrong_at", wrong_at(5), {x}, four).ok);
    GradcheckOptions all_of_them;
    all_of_them.every_element = true;
    CHECK(gradcheck("wrong_at", wrong_at(5), {x}, all_of_them).checked == 10);
}

TEST_CASE("gradcheck: parameters checked in place are restored, values and gradients") {
    Generator gen(3);
    Var w(Tensor::normal(Shape{3, 2}, 0, 1, gen), true);
    Var x(Tensor::normal(Shape{4, 3}, 0, 1, gen));
    const Tensor before = w.value().clone();
    w.node()->grad = Tensor::full(Shape{3, 2}, 5);
    const GradcheckResult r = gradcheck("linear", [&] { return tanh(matmul(x, w)); }, {w});
    CHECK(r.ok);
    CHECK(r.checked == 6);
    CHECK(allclose(w.value(), before, 0, 0));
    CHECK(allclose(w.grad(), Tensor::full(Shape{3, 2}, 5), 0, 0));
}

namespace {

// Counts its copies, and how often it was called, in the counters it points at.
struct Counted {
    int* copies;
    int* calls;
    Counted(int* c, int* n) : copies(c), calls(n) {}
    Counted(const Counted& o) : copies(o.copies), calls(o.calls) { ++*copies; }
    double operator()(double x, std::vector<double>& out) const {
        ++*calls;
        out.push_back(x);
        return 2 * x + 1;
    }
};

double call_twice(FunctionRef<double(double, std::vector<double>&)> f, std::vector<double>& out) {
    return f(1.5, out) + f(-4, out);
}

}  // namespace

TEST_CASE("FunctionRef and the tests' Function: the callable given, called with the arguments given") {
    int copies = 0, calls = 0;
    std::vector<double> seen;
    const Counted counted(&copies, &calls);
    // gradcheck's parameter type: the callable itself, never copied;
    // references reach it as references.
    CHECK(call_twice(counted, seen) == (2 * 1.5 + 1) + (2 * -4 + 1));
    CHECK(calls == 2);
    CHECK(copies == 0);
    CHECK(seen == std::vector<double>{1.5, -4});
    // A lambda's captures are the caller's.
    double offset = 10;
    std::vector<double> unused;
    CHECK(call_twice([&](double x, std::vector<double>&) { return x + offset; }, unused) == 11.5 + 6);

    // The tests' Function keeps one copy, which its own copies share.
    Function<double(double, std::vector<double>&)> kept = counted;
    CHECK(copies == 1);
    const auto shared = kept;
    CHECK(copies == 1);
    CHECK(shared(3, seen) == 7);
    CHECK(calls == 3);
    CHECK(call_twice(kept, seen) == -3);  // a Function passed where a FunctionRef is taken
    CHECK(seen == std::vector<double>{1.5, -4, 3, 1.5, -4});
    Function<double(double, std::vector<double>&)> none = nullptr;
    CHECK(none == nullptr);
    CHECK(kept != nullptr);
    CHECK_THROWS_AS(none(1, seen), std::bad_function_call);
}

// ---- fused ops and their composite twins: same value, same gradient ---------------

namespace {

void check_twins(const std::vector<Tensor>& inputs, const Function<Var(const std::vector<Var>&)>& fused,
                 const Function<Var(const std::vector<Var>&)>& composite) {
    std::vector<Var> a, b;
    for (const Tensor& t : inputs) a.emplace_back(t.clone(), true), b.emplace_back(t.clone(), true);
    Var fa = fused(a), fb = composite(b);
    CHECK(allclose(fa.value(), fb.value(), 1e-10, 1e-12));
    fa.backward(Tensor::ones(fa.shape()));
    fb.backward(Tensor::ones(fb.shape()));
    for (size_t k = 0; k < a.size(); ++k) CHECK(allclose(a[k].grad(), b[k].grad(), 1e-9, 1e-12));
}

}  // namespace

TEST_CASE("twins: softmax (one kernel, backward by hand) = softmax_composed, along every axis") {
    Generator gen(12);
    const Tensor scores = Tensor::normal(Shape{3, 4, 5}, 0, 3, gen);
    // The outputs weighted at random before the sum: a slice of a softmax sums
    // to 1 whatever its input, so an unweighted sum has gradient 0 in both.
    const Var w(Tensor::normal(Shape{3, 4, 5}, 0, 1, gen));
    for (int axis : {0, 1, 2, -1})
        check_twins({scores}, [&](const std::vector<Var>& x) { return sum(softmax(x[0], axis) * w); },
                    [&](const std::vector<Var>& x) { return sum(softmax_composed(x[0], axis) * w); });
}

TEST_CASE("twins: cross_entropy = mean of −log_softmax[target] (with ignore_index and smoothing)") {
    Generator gen(11);
    const Tensor logits = Tensor::normal(Shape{5, 4}, 0, 2, gen);
    const Tensor targets = Tensor::from({3, -100, 0, 2, 1});
    check_twins({logits}, [&](const std::vector<Var>& x) { return cross_entropy(x[0], targets); },
                [&](const std::vector<Var>& x) { return nll_loss(log_softmax(x[0], -1), targets); });
    // Smoothing ε: (1−ε)·NLL + ε·mean over counted rows of −mean_c log_softmax.
    const real eps = 0.2;
    const Tensor counted = Tensor::from({1, 0, 1, 1, 1});
    check_twins(
        {logits}, [&](const std::vector<Var>& x) { return cross_entropy(x[0], targets, -100, eps); },
        [&](const std::vector<Var>& x) {
            Var lsm = log_softmax(x[0], -1);
            Var uniform = sum(mean(lsm, -1) * Var(counted)) * real(-1.0 / 4);
            return nll_loss(lsm, targets) * (1 - eps) + uniform * eps;
        });
}

TEST_CASE("twins: matmul_bias = matmul, then add the bias (both layouts of w, leading axes as rows)") {
    Generator gen(13);
    const Tensor x = Tensor::normal(Shape{2, 3, 4}, 0, 1, gen), b = Tensor::normal(Shape{5}, 0, 1, gen);
    const Tensor w = Tensor::normal(Shape{4, 5}, 0, 1, gen), wt = Tensor::normal(Shape{5, 4}, 0, 1, gen);
    const Var r(Tensor::normal(Shape{2, 3, 5}, 0, 1, gen));  // weights the outputs, so every gradient differs
    check_twins({x, w, b}, [&](const std::vector<Var>& in) { return sum(matmul_bias(in[0], in[1], in[2]) * r); },
                [&](const std::vector<Var>& in) { return sum((matmul(in[0], in[1]) + in[2]) * r); });
    check_twins({x, wt, b},
                [&](const std::vector<Var>& in) { return sum(matmul_bias(in[0], in[1], in[2], true) * r); },
                [&](const std::vector<Var>& in) { return sum((matmul(in[0], in[1], false, true) + in[2]) * r); });
}

TEST_CASE("twins: matmul_bias_relu = relu of matmul, then add the bias (both layouts of w)") {
    Generator gen(14);
    const Tensor x = Tensor::normal(Shape{2, 3, 4}, 0, 1, gen), b = Tensor::normal(Shape{5}, 0, 1, gen);
    const Tensor w = Tensor::normal(Shape{4, 5}, 0, 1, gen), wt = Tensor::normal(Shape{5, 4}, 0, 1, gen);
    const Var r(Tensor::normal(Shape{2, 3, 5}, 0, 1, gen));
    check_twins({x, w, b}, [&](const std::vector<Var>& in) { return sum(matmul_bias_relu(in[0], in[1], in[2]) * r); },
                [&](const std::vector<Var>& in) { return sum(relu(matmul(in[0], in[1]) + in[2]) * r); });
    check_twins({x, wt, b},
                [&](const std::vector<Var>& in) { return sum(matmul_bias_relu(in[0], in[1], in[2], true) * r); },
                [&](const std::vector<Var>& in) { return sum(relu(matmul(in[0], in[1], false, true) + in[2]) * r); });
}

TEST_CASE("twins: conv2d = a direct sum over the window (PyTorch's definition)") {
    Generator gen(5);
    const Tensor x = Tensor::normal(Shape{2, 3, 6, 5}, 0, 1, gen);
    const Tensor w = Tensor::normal(Shape{4, 3, 3, 2}, 0, 1, gen);
    const Tensor b = Tensor::normal(Shape{4}, 0, 1, gen);
    const int sh = 2, sw = 1, ph = 1, pw = 0;
    // out[n, o, i, j] = b[o] + Σ_{c, u, v} w[o, c, u, v]·x[n, c, i·sh − ph + u, j·sw − pw + v]
    auto direct = [&](const std::vector<Var>& in) {
        const int64_t Ho = (6 + 2 * ph - 3) / sh + 1, Wo = (5 + 2 * pw - 2) / sw + 1;
        std::vector<Var> outs;
        Var xp = in[0];
        for (int64_t i = 0; i < Ho; ++i)
            for (int64_t j = 0; j < Wo; ++j) {
                Var acc = reshape(in[2], {1, 4});  // 1×O, broadcast over the batch
                for (int u = 0; u < 3; ++u)
                    for (int v = 0; v < 2; ++v) {
                        const int64_t y = i * sh - ph + u, xx = j * sw - pw + v;
                        if (y < 0 || y >= 6 || xx < 0 || xx >= 5) continue;
                        Var patch = reshape(slice(slice(xp, 2, y, y + 1), 3, xx, xx + 1), {2, 3});  // B×C
                        Var wt = reshape(slice(slice(in[1], 2, u, u + 1), 3, v, v + 1), {4, 3});    // O×C
                        acc = acc + matmul(patch, wt, false, true);                                  // B×O
                    }
                outs.push_back(acc);
            }
        return reshape(stack(outs, 2), {2, 4, Ho, Wo});  // B×O×(Ho·Wo) → B×O×Ho×Wo
    };
    check_twins({x, w, b}, [&](const std::vector<Var>& in) { return conv2d(in[0], in[1], in[2], {sh, sw}, {ph, pw}); },
                direct);
}
