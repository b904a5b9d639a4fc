// A weak answer to exercise 7.1, as a student wrote it (docs/course/7-write-the-test.md,
// "One student's round", the first attempt): the reference right, one unmasked
// case per entry on 1-D points, entry 52 at w = 1 exactly, no property. Its
// checks pass on the library and catch 5 of the 10 mistakes; make
// check-exercises proves that the grader fails it and names what got through.
#include <doctest/doctest.h>
// (Exercise stubs below: helpers and parameters they leave unused are not warned about.)
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-variable"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#ifdef __clang__
#pragma GCC diagnostic ignored "-Wunused-lambda-capture"
#pragma GCC diagnostic ignored "-Wunused-private-field"
#endif
#include <stdexcept>

#include <cmath>
#include <memory>
#include <vector>

#include "attention/kernel_regression.hpp"
#include "tensor/ops.hpp"
#include "tests/grad/catalog.hpp"
#include "tests/grad/helpers.hpp"

using namespace attn;
using namespace attn::testing;

static_assert(std::is_same_v<real, double>, "tests/grad runs in the double build");

namespace {

// ---- the independent reference: the catalog's formula in plain loops ----------------------

// Whether query j of example b may look up key i: a B×n key mask, a
// (B or 1)×m×n keep mask, or none.
double keeps(const Array& mask, int64_t b, int64_t j, int64_t i) {
    if (mask.numel() == 0) return 1;                        // no mask: every key
    if (mask.rank() == 2) return mask(b, i);                // B×n
    return mask(mask.size(0) == 1 ? 0 : b, j, i);           // (B or 1)×m×n
}

// 51 (w = 1) and 52:  f(x) = Σ_i softmax_i(−½ ((x − x_i) w)²) y_i   over the kept keys,
//                     with ((x − x_i) w)² = Σ_k ((x_k − x_ik) w)² for points of p coordinates
// queries B×m×p, keys B×n×p, values B×n×d_y (inputs q, k, v of the case), mask
// → output B×m×d_y, weights B×m×n
std::vector<Expected> kernel_regression_reference(const Ref& r, double w, size_t q = 0, size_t k = 1, size_t v = 2) {
    const Array &X = r.x[q], &K = r.x[k], &Y = r.x[v];
    const Array mask = mask_or_all(r, 0);
    const int64_t B = X.size(0), m = X.size(1), n = K.size(1), p = X.size(2), d = Y.size(2);
    Array out({B, m, d}), a({B, m, n});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < m; ++j) {
            double biggest = -1e300, total = 0;
            std::vector<double> e(static_cast<size_t>(n));
            for (int64_t i = 0; i < n; ++i) {
                double d2 = 0;
                for (int64_t c = 0; c < p; ++c) d2 += (X(b, j, c) - K(b, i, c)) * w * (X(b, j, c) - K(b, i, c)) * w;
                e[static_cast<size_t>(i)] = -0.5 * d2;
                if (keeps(mask, b, j, i) != 0) biggest = std::max(biggest, e[static_cast<size_t>(i)]);
            }
            for (int64_t i = 0; i < n; ++i)
                if (keeps(mask, b, j, i) != 0) total += std::exp(e[static_cast<size_t>(i)] - biggest);
            for (int64_t i = 0; i < n; ++i) {
                const double weight = keeps(mask, b, j, i) != 0 && total > 0 ? std::exp(e[static_cast<size_t>(i)] - biggest) / total : 0;
                a(b, j, i) = weight;
                for (int64_t c = 0; c < d; ++c) out(b, j, c) += weight * Y(b, i, c);
            }
        }
    return {{"output", out}, {"weights", a}};
}

std::vector<Expected> nadaraya_watson_pooling_reference(const Ref& r, size_t q = 0, size_t k = 1, size_t v = 2) {
    return kernel_regression_reference(r, 1.0, q, k, v);
}

std::vector<Expected> parametric_nadaraya_watson_pooling_reference(const Ref& r, size_t q = 0, size_t k = 1,
                                                                   size_t v = 2) {
    return kernel_regression_reference(r, r.p["w"][0], q, k, v);
}

// ---- runs, masks and properties ------------------------------------------------------------

Outputs run_pooling(Module*, In x, Masks m) {
    return output_and_weights(nadaraya_watson_pooling(x[0], x[1], x[2], mask_or_none(m)));
}
// The training points look each other up: queries = keys = x[0], values x[1].
Outputs run_pooling_self(Module*, In x, Masks m) {
    return output_and_weights(nadaraya_watson_pooling(x[0], x[0], x[1], mask_or_none(m)));
}
Outputs run_parametric(Module* module, In x, Masks m) {
    return output_and_weights(as<ParametricNadarayaWatsonPooling>(module).forward(x[0], x[1], x[2], mask_or_none(m)));
}
Outputs run_parametric_self(Module* module, In x, Masks m) {
    return output_and_weights(as<ParametricNadarayaWatsonPooling>(module).forward(x[0], x[0], x[1], mask_or_none(m)));
}

// 1×m×n: query j hides key j (leave-one-out training; m ≤ n).
Tensor leave_one_out(int64_t m, int64_t n) {
    Tensor keep = Tensor::ones(Shape{1, m, n});
    for (int64_t j = 0; j < m; ++j) keep[j * n + j] = 0;
    return keep;
}

const KeySet points_masked{.mask = 0, .inputs = {1, 2}, .weights = {"weights"}, .zero_when_empty = {"output"}};

// With a B×n key mask: the weights are a distribution, the output a convex
// combination of the values, and the keys with their values are a set.
std::vector<Property> key_mask_properties() {
    return {rows_sum_to_one("weights")};
}

std::unique_ptr<Module> parametric(real w) { return std::make_unique<ParametricNadarayaWatsonPooling>(w); }

// ---- the registry entries ---------------------------------------------------------------
const RegisterEntry nadaraya_watson_pooling_entry(51, "nadaraya_watson_pooling", {
    {.variant = "2 queries, 3 keys in 1-D",
     .inputs = {Shape{2, 2, 1}, Shape{2, 3, 1}, Shape{2, 3, 1}},
     .run = run_pooling,
     .reference = [](const Ref& r) { return nadaraya_watson_pooling_reference(r); }},
});

const RegisterEntry parametric_nadaraya_watson_pooling_entry(52, "parametric_nadaraya_watson_pooling", {
    {.variant = "w = 1, 2 queries, 3 keys in 1-D",
     .inputs = {Shape{2, 2, 1}, Shape{2, 3, 1}, Shape{2, 3, 1}},
     .make = [](Generator&) { return parametric(1); },
     .run = run_parametric,
     .reference = [](const Ref& r) { return parametric_nadaraya_watson_pooling_reference(r); },
     .randomize_parameters = false},
});

// The catalog's data: keys (0, 1, 2), values (0, 1, 4), query 1.
struct Data {
    Var queries{Tensor::from({1}, {1, 1, 1})};
    Var keys{Tensor::from({0, 1, 2}, {1, 3, 1})};
    Var values{Tensor::from({0, 1, 4}, {1, 3, 1})};
};

}  // namespace

TEST_CASE("nadaraya_watson_pooling: the catalog's reference values; constant values come back exactly") {
    const Data d;
    const AttentionOutput out = nadaraya_watson_pooling(d.queries, d.keys, d.values);
    check_close(out.weights.value(), {0.274069, 0.451863, 0.274069});
    check_close(out.output.value(), {1.548137});

    Generator gen(51);
    const Var x(Tensor::normal({2, 5, 3}, 0, 1, gen)), k(Tensor::normal({2, 6, 3}, 0, 1, gen));
    const AttentionOutput flat = nadaraya_watson_pooling(x, k, Var(Tensor::full({2, 6, 2}, 2.5)));
    for (int64_t i = 0; i < flat.output.numel(); ++i)
        CHECK(flat.output.value()[i] == doctest::Approx(2.5).epsilon(1e-15));
}

TEST_CASE("nadaraya_watson_pooling: with a leave-one-out mask a point's own target does not predict it") {
    Generator gen(52);
    const Var x(Tensor::normal({1, 4, 1}, 0, 1, gen));
    Tensor y = Tensor::normal({1, 4, 1}, 0, 1, gen);
    Tensor keep =
        sub(Tensor::ones({1, 4, 4}), Tensor::from({1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, {1, 4, 4}));
    const Tensor before = nadaraya_watson_pooling(x, x, Var(y), keep).output.value();
    y[2] += 10;  // change the target of point 2 only
    const Tensor after = nadaraya_watson_pooling(x, x, Var(y), keep).output.value();
    CHECK(after[2] == before[2]);
    CHECK(after[0] != before[0]);
}

TEST_CASE(
    "parametric_nadaraya_watson_pooling: w = 2, w = 0 and w = 1 on the catalog's data; large w is nearest-key lookup") {
    const Data d;
    ParametricNadarayaWatsonPooling pool(2);
    AttentionOutput out = pool.forward(d.queries, d.keys, d.values);
    check_close(out.weights.value(), {0.106507, 0.786986, 0.106507});
    check_close(out.output.value(), {1.213014});

    pool.w.value().fill_(0);
    check_close(pool.forward(d.queries, d.keys, d.values).output.value(), {1.666667});

    pool.w.value().fill_(1);
    const AttentionOutput one = pool.forward(d.queries, d.keys, d.values);
    const AttentionOutput plain = nadaraya_watson_pooling(d.queries, d.keys, d.values);
    CHECK(allclose(one.weights.value(), plain.weights.value(), 0, 1e-15));

    pool.w.value().fill_(30);
    const Var q(Tensor::from({1.8}, {1, 1, 1}));  // nearest key: 2, value 4
    check_close(pool.forward(q, d.keys, d.values).output.value(), {4.0});
    CHECK(pool.taxonomy().scoring == "similarity_score");
}
